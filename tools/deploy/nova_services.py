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
"""nova's services: nova-api, the cells, the computes and the control.

nova-api runs under gunicorn (in its eventlet worker where nova's API
monkey patches when imported); ``nova-manage`` makes the API database
and cell0 and cell1. Two ``fake.FakeDriver`` computes, compute1 with the
gold trait on its root from nova's ``provider.yaml``. The control, which
each strategy restarts: a super conductor (API-level queue) and a cell
conductor (cell1's queue), both ``nova-image-traits-conductor`` (or
nova's own ``nova-conductor``), and nova-scheduler with
ImageTraitsFilter, each logging to a file of its own for each strategy.
"""

import datetime
import importlib.metadata
import os
import shutil
import sys

from cloud_contents import TRAITS
from processes import BIN
from service_config import add_precheck

DECISION = 'Rebuild image traits decision:'
INSTALLED = 'nova-image-traits rebuild hook installed in nova-conductor'


def nova_api_uses_eventlet():
    """Whether the installed nova's API monkey patches when imported.

    NOTE(series 2025.1, 2025.2): nova 31 and 32 patch with eventlet when
    ``nova.api.openstack`` is imported; from nova 33 the API runs on
    native threads unless told otherwise.
    """
    return int(importlib.metadata.version('nova').split('.')[0]) < 33


class NovaServices:
    """nova's databases and cells, and its services."""

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
