# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Bring up a small real cloud on 127.0.0.1 and rebuild servers in it.

Run by ``tools/deploy/run.sh`` with the Python of the deployment venv, in
which the nova-image-traits wheel, nova, placement, keystone, glance,
cinder, gunicorn and the clients are installed.

Every service is a separate process this script starts and stops by its
PID (each in its own session, so that a service's own children go too):
MariaDB and RabbitMQ from Debian; Keystone, Glance (file store), placement,
cinder-api and nova-api under gunicorn; cinder-scheduler and cinder-volume;
a super conductor (API-level queue) and a cell conductor (cell1's queue),
both ``nova-image-traits-conductor``; nova-scheduler with
``ImageTraitsFilter`` enabled beside nova's default filters; two
fake-driver computes; and a neutron stand-in (``neutron_standin.py``).
Logs go to ``<work>/logs``.

Two stand-ins, because what they stand for cannot run here and no rebuild
decision depends on it: neutron (``neutron_standin.py`` answers every read
with nothing), and cinder-volume's storage backend
(``cinder_standin_driver.py``: cinder's own fake LVM driver, with each
volume a sparse file that cinder's image code, with ``qemu-img``, really
writes). nova-compute runs nova's ``fake.FakeDriver``, which boots no
guest and attaches a volume without connecting to it.

Then, for every strategy the installed package offers, it restarts the
conductors and the scheduler with that strategy and checks the rebuilds of
``expectations.py`` through the ``openstack`` client, as a user (boot,
rebuild, show) and as an admin (images, traits, services, state resets),
and after each refusal what nova's databases keep of the refused image.
Then two refusals by ``ImageTraitsFilter`` alone (with the hook, and with
nova's own ``nova-conductor``), and tempest with the nova-api pre-check
in nova-api's paste pipeline and cinder available.
"""

import argparse
import datetime
import importlib.metadata
import os
import secrets
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients  # noqa: E402
from cloud_contents import TRAITS  # noqa: E402
import expectations  # noqa: E402
import infrastructure  # noqa: E402
import nova_db  # noqa: E402
import processes  # noqa: E402
from processes import BIN  # noqa: E402
from processes import HOST  # noqa: E402
import service_config  # noqa: E402
from service_config import add_precheck  # noqa: E402
import shared_services  # noqa: E402

DECISION = 'Rebuild image traits decision:'
INSTALLED = 'nova-image-traits rebuild hook installed in nova-conductor'


def nova_api_uses_eventlet():
    """Whether the installed nova's API monkey patches when imported.

    NOTE(series 2025.1, 2025.2): nova 31 and 32 patch with eventlet when
    ``nova.api.openstack`` is imported; from nova 33 the API runs on
    native threads unless told otherwise.
    """
    return int(importlib.metadata.version('nova').split('.')[0]) < 33


class Deployment(processes.Processes,
                 infrastructure.Infrastructure,
                 service_config.ServiceConfig,
                 shared_services.SharedServices,
                 clients.Clients,
                 nova_db.NovaDatabases):

    def __init__(self, work, base_port):
        self.work = work
        self.logs = os.path.join(work, 'logs')
        self.procs = {}
        self.timings = []
        names = ('mysql', 'rabbit', 'rabbit_dist', 'epmd', 'keystone',
                 'glance', 'placement', 'nova', 'neutron', 'cinder')
        self.port = {n: base_port + i for i, n in enumerate(names)}
        self.pw = {n: secrets.token_hex(12) for n in (
            'db', 'rabbit', 'admin', 'demo', 'glance', 'nova',
            'placement', 'cinder')}
        self.auth_url = 'http://%s:%d/v3' % (HOST, self.port['keystone'])
        self.secret_tokens = []
        self._auto_approve = None

    def setup_nova(self):
        d = os.path.join(self.work, 'nova')
        os.makedirs(os.path.join(d, 'state'))
        shutil.copy(os.path.join(sys.prefix, 'etc', 'nova',
                                 'api-paste.ini'), d)
        self.write_nova_confs(self.strategies[0])
        nm = [os.path.join(BIN, 'nova-manage'), '--config-file',
              self.nova_conf]
        self.run(nm + ['api_db', 'sync'])
        self.run(nm + ['cell_v2', 'map_cell0', '--database_connection',
                       self.db_url('nova_cell0')])
        self.run(nm + ['cell_v2', 'create_cell', '--name', 'cell1',
                       '--transport-url', self.rabbit_url('nova_cell1'),
                       '--database_connection', self.db_url('nova_cell1')])
        self.run(nm + ['db', 'sync'])
        # cell1's schema: its [database] over nova.conf's [api_database].
        self.run(nm + ['--config-file', self.cell_conf, 'db', 'sync'])
        self.start_nova_api()

    def start_nova_api(self):
        d = os.path.join(self.work, 'nova')
        self.gunicorn('nova-api', 'nova.wsgi.osapi_compute:application',
                      self.port['nova'], {'OS_NOVA_CONFIG_DIR': d,
                                          'OS_NOVA_CONFIG_FILES':
                                          'api-paste.ini;nova.conf'},
                      eventlet=nova_api_uses_eventlet())

    def enable_precheck(self):
        """nova-api again, with the pre-check in its paste pipelines.

        As devstack/plugin.sh puts it there: right after keystonecontext
        in the keystone pipeline of each compute API composite. nova-api
        reads its [image_traits] from nova.conf, as written last.
        """
        path = os.path.join(self.work, 'nova', 'api-paste.ini')
        with open(path) as f:
            text = add_precheck(f.read(), path)
        with open(path, 'w') as f:
            f.write(text)
        self.stop('nova-api')
        self.start_nova_api()

    def start_computes(self):
        d = os.path.join(self.work, 'nova')
        # compute1's root gets CUSTOM_NIT_GOLD from nova's provider.yaml.
        pc = os.path.join(d, 'provider-config-compute1')
        os.makedirs(pc)
        with open(os.path.join(pc, 'provider.yaml'), 'w') as f:
            f.write("meta:\n  schema_version: '1.0'\nproviders:\n"
                    "  - identification:\n      uuid: $COMPUTE_NODE\n"
                    "    traits:\n      additional:\n        - %s\n"
                    % TRAITS['gold'])
        for host in ('compute1', 'compute2'):
            conf = os.path.join(d, '%s.conf' % host)
            compute = {'provider_config_location': (
                pc if host == 'compute1' else os.path.join(d, 'none'))}
            self.write_conf(conf, {
                'DEFAULT': {'host': host,
                            'compute_driver': 'fake.FakeDriver',
                            'state_path': os.path.join(d, 'state', host)},
                'compute': compute,
            })
            self.start(host, [os.path.join(BIN, 'nova-compute'),
                              '--config-file', self.cell_conf,
                              '--config-file', conf])
        nm = [os.path.join(BIN, 'nova-manage'), '--config-file',
              self.nova_conf]

        def discovered():
            out = self.run(nm + ['cell_v2', 'discover_hosts', '--verbose'],
                           check=False).stdout
            hosts = self.run(nm + ['cell_v2', 'list_hosts'],
                             check=False).stdout
            return 'compute1' in hosts and 'compute2' in hosts or (
                out and False)
        self.wait_for('both computes mapped to cell1', discovered, 180, 3)

    def start_control(self, strategy, scheduler_strategy=None, hook=True):
        """The conductors and the scheduler, with STRATEGY.

        :param scheduler_strategy: ImageTraitsFilter's, if not STRATEGY
        :param hook: False runs nova's own ``nova-conductor``
        """
        self.write_nova_confs(strategy, scheduler_strategy)
        # nova writes services.updated_at in UTC, without a zone.
        self.control_started = datetime.datetime.now(
            datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
        self.control_logs = {}
        conductor = ('nova-image-traits-conductor' if hook else
                     'nova-conductor')
        tag = strategy if hook else 'nova-conductor'
        commands = {
            'super-conductor': ([conductor, '--config-file', self.nova_conf],
                                tag),
            'cell1-conductor': ([conductor, '--config-file', self.cell_conf],
                                tag),
            'scheduler': (['nova-scheduler', '--config-file',
                           self.scheduler_conf],
                          scheduler_strategy or strategy),
        }
        # A later phase may append to the log of an earlier one: look for
        # this start's lines only.
        offsets = {}
        for name, (argv, tag) in commands.items():
            log = '%s.%s' % (name, tag)
            path = os.path.join(self.logs, log + '.log')
            offsets[name] = (os.path.getsize(path) if os.path.exists(path)
                             else 0)
            self.control_logs[name] = self.start(
                name, [os.path.join(BIN, argv[0])] + argv[1:], log=log)
        if hook:
            for name in ('super-conductor', 'cell1-conductor'):
                self.wait_log(self.control_logs[name], INSTALLED,
                              offset=offsets[name])
        for name in self.control_logs:
            self.wait_log(self.control_logs[name], 'Starting %s node' % (
                'conductor' if 'conductor' in name else 'scheduler'), 120,
                offset=offsets[name])

    def stop_control(self):
        self.stop('scheduler', 'cell1-conductor', 'super-conductor')


def installed_strategies():
    """The choices of ``[image_traits] strategy`` in the installed package."""
    from nova_image_traits.conf import image_traits
    for opt in image_traits.ALL_OPTS:
        if opt.name == 'strategy':
            return [c[0] if isinstance(c, tuple) else c
                    for c in opt.type.choices]
    raise SystemExit('nova_image_traits has no [image_traits] strategy')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work', required=True)
    parser.add_argument('--base-port', type=int, default=17300)
    parser.add_argument('--strategies', nargs='*',
                        help='only these (default: every installed one)')
    parser.add_argument('--keep', action='store_true',
                        help='leave the services running (debugging)')
    args = parser.parse_args()
    from scenarios import Scenarios

    if os.path.exists(args.work):
        shutil.rmtree(args.work)
    dep = Deployment(args.work, args.base_port)
    os.makedirs(dep.logs)
    os.makedirs(os.path.join(args.work, 'pids'))
    strategies = args.strategies or installed_strategies()
    table = expectations.expectations_for(strategies)
    dep.strategies = strategies
    ok = False
    try:
        dep.phase('check ports', dep.check_ports)
        dep.phase('mariadb', dep.start_mariadb)
        dep.phase('rabbitmq', dep.start_rabbitmq)
        dep.phase('neutron stand-in', dep.start_neutron_standin)
        dep.phase('keystone', dep.setup_keystone)
        dep.phase('identity', dep.setup_identity)
        dep.phase('glance', dep.setup_glance)
        dep.phase('placement', dep.setup_placement)
        dep.phase('cinder (started)', dep.setup_cinder)
        dep.phase('nova api and cells', dep.setup_nova)
        dep.phase('control (%s)' % strategies[0], dep.start_control,
                  strategies[0])
        dep.phase('computes', dep.start_computes)
        sc = Scenarios(dep, table)
        dep.phase('cloud contents', sc.prepare)
        for i, strategy in enumerate(strategies):
            if i == len(strategies) - 1:
                # Before the last strategy, whose control tempest uses.
                dep.phase('refused by the filter alone', sc.run_filter_alone)
            if i or len(strategies) == 1:
                dep.phase('restart control (%s)' % strategy,
                          sc.restart_control, strategy)
            dep.phase('rebuilds (%s)' % strategy, sc.run_strategy, strategy)
        dep.phase('nova-api with the pre-check', dep.enable_precheck)
        dep.phase('computes reporting', dep.wait_computes_report)
        dep.phase('tempest', sc.run_tempest, strategies[-1])
        dep.phase('logs hold no secret', sc.check_secrets)
        ok = True
    finally:
        if not (args.keep and ok):
            dep.phase('stop', dep.stop_all)
        with open(os.path.join(args.work, 'timings.txt'), 'w') as f:
            for name, seconds in dep.timings:
                f.write('%-40s %6.0f s\n' % (name, seconds))
        dep.note('timings:\n' + open(os.path.join(
            args.work, 'timings.txt')).read())
        dep.note('deployment %s' % ('PASSED' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
