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
"""The OpenStack services nova uses: Keystone, Glance, placement, cinder.

Keystone, Glance (file store), placement and cinder-api each run under
gunicorn (:meth:`SharedServices.gunicorn`), with a directory of their own
under ``<work>`` for their configuration and state; cinder-scheduler and
cinder-volume are cinder's own commands, cinder-volume with the
``cinder_standin_driver.py`` backend. :meth:`SharedServices.setup_identity`
makes the projects, users, services and endpoints of all of them.
"""

import os
import shutil
import sys

from processes import BIN
from processes import HERE
from processes import HOST


class SharedServices:
    """Each service's database, configuration and processes."""

    def gunicorn(self, name, app, port, env, eventlet=False):
        d = os.path.join(self.work, name)
        os.makedirs(d, exist_ok=True)
        # NOTE: an app that monkey patches with eventlet when it is
        # imported hangs gunicorn's threaded worker, whose own threads and
        # selector it patches; gunicorn's eventlet worker patches first.
        worker = ('worker_class = "eventlet"\nworker_connections = 100\n'
                  if eventlet else 'threads = 4\n')
        with open(os.path.join(d, 'gunicorn.conf.py'), 'w') as f:
            # NOTE(founders): the apps parse sys.argv when they load, so
            # gunicorn takes every setting from this file and no argument.
            f.write('wsgi_app = %r\nbind = %r\nworkers = 1\n%s'
                    'timeout = 120\naccesslog = "-"\n' % (
                        app, '%s:%d' % (HOST, port), worker))
        self.start(name, [os.path.join(BIN, 'gunicorn')], env=env, cwd=d)
        self.wait_http('http://%s:%d/' % (HOST, port), timeout=180)

    def setup_keystone(self):
        d = os.path.join(self.work, 'keystone')
        for sub in ('fernet', 'receipts', 'credential'):
            os.makedirs(os.path.join(d, sub))
        conf = os.path.join(d, 'keystone.conf')
        self.write_conf(conf, {
            'DEFAULT': {'debug': 'True'},
            'database': {'connection': self.db_url('keystone')},
            'token': {'provider': 'fernet'},
            'fernet_tokens': {'key_repository': os.path.join(d, 'fernet')},
            'fernet_receipts': {
                'key_repository': os.path.join(d, 'receipts')},
            'credential': {
                'key_repository': os.path.join(d, 'credential')},
        })
        km = [os.path.join(BIN, 'keystone-manage'), '--config-file', conf]
        self.run(km + ['db_sync'])
        for cmd in ('fernet_setup', 'credential_setup'):
            self.run(km + [cmd, '--keystone-user', 'root',
                           '--keystone-group', 'root'])
        self.run(km + ['bootstrap', '--bootstrap-password', self.pw['admin'],
                       '--bootstrap-admin-url', self.auth_url,
                       '--bootstrap-public-url', self.auth_url,
                       '--bootstrap-internal-url', self.auth_url,
                       '--bootstrap-region-id', 'RegionOne'])
        self.gunicorn('keystone', 'keystone.wsgi.api:application',
                      self.port['keystone'], {'OS_KEYSTONE_CONFIG_DIR': d})

    def setup_identity(self):
        """Projects, users, services and endpoints, with openstacksdk."""
        import openstack
        conn = openstack.connect(
            auth_url=self.auth_url, username='admin',
            password=self.pw['admin'], project_name='admin',
            user_domain_name='Default', project_domain_name='Default',
            region_name='RegionOne', identity_interface='public')
        idn = conn.identity
        service = idn.create_project(name='service', domain_id='default')
        demo = idn.create_project(name='demo', domain_id='default')
        roles = {r.name: r for r in idn.roles()}
        for user in ('glance', 'nova', 'placement', 'cinder'):
            u = idn.create_user(name=user, password=self.pw[user],
                                domain_id='default')
            idn.assign_project_role_to_user(service, u, roles['admin'])
            idn.assign_project_role_to_user(service, u, roles['service'])
        u = idn.create_user(name='demo', password=self.pw['demo'],
                            domain_id='default')
        idn.assign_project_role_to_user(demo, u, roles['member'])
        idn.assign_project_role_to_user(demo, u, roles['reader'])
        for name, stype, url in (
                ('glance', 'image', 'http://%s:%d' % (
                    HOST, self.port['glance'])),
                ('placement', 'placement', 'http://%s:%d' % (
                    HOST, self.port['placement'])),
                ('nova', 'compute', 'http://%s:%d/v2.1' % (
                    HOST, self.port['nova'])),
                ('neutron', 'network', 'http://%s:%d' % (
                    HOST, self.port['neutron'])),
                # nova's [cinder] catalog_info looks for volumev3, tempest's
                # [volume] catalog_type for block-storage: as devstack, both.
                ('cinder', 'block-storage', self.cinder_url()),
                ('cinderv3', 'volumev3', self.cinder_url())):
            svc = idn.create_service(name=name, type=stype)
            idn.create_endpoint(service_id=svc.id, interface='public',
                                url=url, region_id='RegionOne')
        conn.close()

    def setup_glance(self):
        d = os.path.join(self.work, 'glance')
        os.makedirs(d)
        shutil.copy(os.path.join(sys.prefix, 'etc', 'glance',
                                 'glance-api-paste.ini'), d)
        conf = os.path.join(d, 'glance-api.conf')
        self.write_conf(conf, {
            'DEFAULT': {'debug': 'True', 'enabled_backends': 'fs:file'},
            'database': {'connection': self.db_url('glance')},
            'keystone_authtoken': self.authtoken('glance'),
            'paste_deploy': {'flavor': 'keystone'},
            'glance_store': {'default_backend': 'fs'},
            'fs': {'filesystem_store_datadir': os.path.join(d, 'images')},
            'os_glance_staging_store': {
                'filesystem_store_datadir': os.path.join(d, 'staging')},
            'os_glance_tasks_store': {
                'filesystem_store_datadir': os.path.join(d, 'tasks')},
            'oslo_concurrency': {'lock_path': os.path.join(d, 'locks')},
        })
        self.run([os.path.join(BIN, 'glance-manage'), '--config-file', conf,
                  'db_sync'])
        self.gunicorn('glance', 'glance.wsgi.api:application',
                      self.port['glance'], {'OS_GLANCE_CONFIG_DIR': d})

    def cinder_url(self):
        return 'http://%s:%d/v3' % (HOST, self.port['cinder'])

    def setup_cinder(self):
        """cinder-api (gunicorn), cinder-scheduler and cinder-volume.

        The backend is ``cinder_standin_driver.FileVolumeDriver``: cinder's
        own fake LVM driver, keeping each volume as a sparse file (see
        that module). :meth:`wait_cinder` waits for it to be schedulable.
        """
        d = os.path.join(self.work, 'cinder')
        os.makedirs(os.path.join(d, 'state'))
        shutil.copy(os.path.join(sys.prefix, 'etc', 'cinder',
                                 'api-paste.ini'), d)
        conf = os.path.join(d, 'cinder.conf')
        # NOTE: cinder-volume runs qemu-img "as root": oslo.concurrency
        # runs it directly when it is root already. Its privsep helpers
        # would start with sudo, which this machine has not.
        privsep = '%s --config-file %s' % (
            os.path.join(BIN, 'privsep-helper'), conf)
        self.write_conf(conf, {
            'DEFAULT': {
                'debug': 'True', 'transport_url': self.rabbit_url('cinder'),
                'auth_strategy': 'keystone', 'my_ip': HOST,
                'host': 'cinder', 'state_path': os.path.join(d, 'state'),
                'api_paste_config': os.path.join(d, 'api-paste.ini'),
                'enabled_backends': 'standin',
                'glance_api_servers': 'http://%s:%d' % (
                    HOST, self.port['glance']),
            },
            'database': {'connection': self.db_url('cinder')},
            'keystone_authtoken': self.authtoken('cinder'),
            'oslo_concurrency': {'lock_path': os.path.join(d, 'locks')},
            'oslo_messaging_rabbit': {'heartbeat_timeout_threshold': '0'},
            'standin': {
                'volume_driver':
                    'cinder_standin_driver.FileVolumeDriver',
                'volume_backend_name': 'standin',
            },
            'cinder_sys_admin': {'helper_command': privsep},
            'privsep_osbrick': {'helper_command': privsep},
        })
        self.cinder_conf = conf
        self.run([os.path.join(BIN, 'cinder-manage'), '--config-file', conf,
                  'db', 'sync'])
        # NOTE: cinder's WSGI application reads no file named in the
        # environment: oslo.config finds ~/cinder.conf.
        self.gunicorn('cinder-api', 'cinder.wsgi.api:application',
                      self.port['cinder'], {'HOME': d})
        self.start('cinder-scheduler', [
            os.path.join(BIN, 'cinder-scheduler'), '--config-file', conf])
        self.start('cinder-volume', [
            os.path.join(BIN, 'cinder-volume'), '--config-file', conf],
            env={'PYTHONPATH': HERE})

    def wait_cinder(self):
        """Until cinder-volume's backend is up, as the scheduler sees it."""
        def up():
            services = self.osj('admin', 'volume', 'service', 'list',
                                '--service', 'cinder-volume')
            return any(s['State'] == 'up' and s['Status'] == 'enabled'
                       for s in services or ())
        self.wait_for('cinder-volume up', up, 180, 2)
        # The scheduler has the backend's capacity once it logged them.
        self.wait_log(self.procs['cinder-scheduler'][1],
                      'Received volume service update from', 120)

    def setup_placement(self):
        d = os.path.join(self.work, 'placement')
        os.makedirs(d)
        conf = os.path.join(d, 'placement.conf')
        self.write_conf(conf, {
            'DEFAULT': {'debug': 'True'},
            'api': {'auth_strategy': 'keystone'},
            'placement_database': {'connection': self.db_url('placement')},
            'keystone_authtoken': self.authtoken('placement'),
        })
        self.run([os.path.join(BIN, 'placement-manage'), '--config-file',
                  conf, 'db', 'sync'])
        self.start_placement()

    def start_placement(self):
        self.gunicorn('placement', 'placement.wsgi.api:application',
                      self.port['placement'], {
                          'OS_PLACEMENT_CONFIG_DIR': os.path.join(
                              self.work, 'placement')})
