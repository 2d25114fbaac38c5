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
nova's own ``nova-conductor``) before the last strategy, whose control
runs with ``[scheduler] enable_isolated_aggregate_filtering`` on; after
its cases, one isolated-aggregate case (``isolation_case.py``), with the
hook and then with the nova-api pre-check; and tempest with the pre-check
in nova-api's paste pipeline and cinder available.

:class:`Deployment` is made of the modules beside this one, one a role:
``processes.py`` (the service processes, the commands and this job's
log), ``infrastructure.py`` (MariaDB, RabbitMQ, the neutron stand-in),
``service_config.py`` (the configuration files), ``shared_services.py``
(Keystone, Glance, placement, cinder), ``nova_services.py`` (nova-api,
the cells, the computes, the conductors and the scheduler),
``clients.py`` (the ``openstack`` client) and ``nova_db.py`` (what is read
in nova's databases). ``scenarios.py`` runs the phases in that cloud.
"""

import argparse
import os
import secrets
import shutil
import signal
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients  # noqa: E402
import expectations  # noqa: E402
import infrastructure  # noqa: E402
import nova_db  # noqa: E402
import nova_services  # noqa: E402
import processes  # noqa: E402
from processes import HOST  # noqa: E402
import service_config  # noqa: E402
import shared_services  # noqa: E402


class Deployment(processes.Processes,
                 infrastructure.Infrastructure,
                 service_config.ServiceConfig,
                 shared_services.SharedServices,
                 clients.Clients,
                 nova_db.NovaDatabases,
                 nova_services.NovaServices):
    """The cloud in WORK, on the loopback ports from BASE_PORT on."""

    def __init__(self, work, base_port):
        self.work = work
        self.logs = os.path.join(work, 'logs')
        self.procs = {}
        self.timings = []
        #: The phase running, for a failure's note (None between two).
        self.current_phase = None
        #: What went wrong and was got over (a retried bootstrap): the
        #: job's last line names it, passed or not.
        self.got_over = []
        names = ('mysql', 'rabbit', 'rabbit_dist', 'epmd', 'keystone',
                 'glance', 'placement', 'nova', 'neutron', 'cinder')
        self.port = {n: base_port + i for i, n in enumerate(names)}
        self.pw = {n: secrets.token_hex(12) for n in (
            'db', 'rabbit', 'admin', 'demo', 'glance', 'nova',
            'placement', 'cinder')}
        self.auth_url = 'http://%s:%d/v3' % (HOST, self.port['keystone'])
        self.secret_tokens = []
        self._auto_approve = None
        #: [scheduler] enable_isolated_aggregate_filtering in the nova.conf
        #: of nova-api and the super conductor and in nova-scheduler's
        self.isolated_aggregate_filtering = False


def installed_strategies():
    """The choices of ``[image_traits] strategy`` in the installed package."""
    from nova_image_traits.conf import image_traits
    for opt in image_traits.ALL_OPTS:
        if opt.name == 'strategy':
            return [c[0] if isinstance(c, tuple) else c
                    for c in opt.type.choices]
    raise SystemExit('nova_image_traits has no [image_traits] strategy')


def start_cloud(dep, strategy, cinder=True):
    """Every service, with the control services of STRATEGY.

    Without CINDER when no server is volume-backed (``load_run.py``).
    """
    dep.phase('check ports', dep.check_ports)
    dep.phase('mariadb', dep.start_mariadb)
    dep.phase('rabbitmq', dep.start_rabbitmq)
    dep.phase('neutron stand-in', dep.start_neutron_standin)
    dep.phase('keystone', dep.setup_keystone)
    dep.phase('identity', dep.setup_identity)
    dep.phase('glance', dep.setup_glance)
    dep.phase('placement', dep.setup_placement)
    if cinder:
        dep.phase('cinder (started)', dep.setup_cinder)
    dep.phase('nova api and cells', dep.setup_nova)
    dep.phase('control (%s)' % strategy, dep.start_control, strategy)
    dep.phase('computes', dep.start_computes)


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
    # NOTE(founders): a stopped CI run sends SIGTERM: stop the services
    # this job started too (below), as on any other failure.
    signal.signal(signal.SIGTERM, _terminated)
    ok = False
    failure = told = None
    try:
        start_cloud(dep, strategies[0])
        sc = Scenarios(dep, table)
        dep.phase('cloud contents', sc.prepare)
        for i, strategy in enumerate(strategies):
            if i == len(strategies) - 1:
                # Before the last strategy, whose control tempest uses.
                dep.phase('refused by the filter alone', sc.run_filter_alone)
                # Its control, and nova-api from the pre-check on, isolate
                # aggregates; nothing is isolated but in the isolation case.
                dep.isolated_aggregate_filtering = True
            if i or len(strategies) == 1:
                dep.phase('restart control (%s)' % strategy,
                          sc.restart_control, strategy)
            dep.phase('rebuilds (%s)' % strategy, sc.run_strategy, strategy)
        dep.phase('isolated aggregate', sc.isolate)
        dep.phase('isolated aggregate, the hook', sc.run_isolation_hook,
                  strategies[-1])
        dep.phase('nova-api with the pre-check', dep.enable_precheck)
        dep.phase('isolated aggregate, the pre-check',
                  sc.run_isolation_precheck)
        dep.phase('computes reporting', dep.wait_computes_report)
        dep.phase('tempest', sc.run_tempest, strategies[-1])
        dep.phase('logs hold no secret', sc.check_secrets)
        ok = True
    except BaseException as exc:
        failure = processes.summary(exc, dep.current_phase)
        if not isinstance(exc, Exception):
            raise  # interrupted: stopped below, and Python says where
        told = traceback.format_exc()
    finally:
        try:
            if not (args.keep and ok):
                dep.phase('stop', dep.stop_all)
            with open(os.path.join(args.work, 'timings.txt'), 'w') as f:
                for name, seconds in dep.timings:
                    f.write('%-40s %6.0f s\n' % (name, seconds))
            dep.note('timings:\n' + open(os.path.join(
                args.work, 'timings.txt')).read())
        finally:
            # NOTE(founders): the failure in full, after the stop's own
            # lines (even when stopping failed too), so that the end of the
            # job's output holds it.
            if told:
                print(told, end='', flush=True)
            said = 'PASSED' if ok else 'FAILED: %s' % failure
            if dep.got_over:
                said += ' (got over: %s)' % '; '.join(dep.got_over)
            dep.note('deployment ' + said)
    return 0 if ok else 1


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


if __name__ == '__main__':
    sys.exit(main())
