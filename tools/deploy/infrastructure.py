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
"""What the OpenStack services of the deployment run on.

MariaDB (its own data directory and socket under ``<work>/mysql``, one
database a service), RabbitMQ with its own epmd (under ``<work>/rabbit``,
one vhost a message bus), and the neutron stand-in
(``neutron_standin.py``); the job's loopback ports are checked free
first.
"""

import os
import shutil
import socket
import sys

from processes import Failure
from processes import HERE
from processes import HOST
from processes import said


class Infrastructure:
    """The ports, the database and message queue servers, and neutron."""

    def check_ports(self):
        for name, port in self.port.items():
            with socket.socket() as s:
                if s.connect_ex((HOST, port)) == 0:
                    raise Failure('port %d (%s) is in use on %s: choose '
                                  'another --base-port' % (port, name, HOST))

    def db_url(self, name):
        return 'mysql+pymysql://nit:%s@%s:%d/%s?charset=utf8' % (
            self.pw['db'], HOST, self.port['mysql'], name)

    def rabbit_url(self, vhost):
        return 'rabbit://nit:%s@%s:%d/%s' % (
            self.pw['rabbit'], HOST, self.port['rabbit'], vhost)

    def start_mariadb(self):
        d = os.path.join(self.work, 'mysql')
        os.makedirs(d)
        self.sock = os.path.join(d, 'mysqld.sock')
        self.install_mariadb_db(os.path.join(d, 'data'))
        self.start('mariadb', [
            'mariadbd', '--no-defaults', '--user=root',
            '--datadir=' + os.path.join(d, 'data'), '--socket=' + self.sock,
            '--port=%d' % self.port['mysql'], '--bind-address=' + HOST,
            '--pid-file=' + os.path.join(d, 'mysqld.pid'),
            '--skip-name-resolve', '--max-connections=1000',
            '--innodb-buffer-pool-size=256M',
            '--innodb-flush-log-at-trx-commit=0'])
        self.wait_for('mariadb', lambda: self.run(
            ['mariadb-admin', '--no-defaults', '--socket=' + self.sock,
             '-uroot', 'ping'], check=False).returncode == 0, 60)
        sql = ["CREATE USER 'nit'@'%s' IDENTIFIED BY '%s';" % (
            HOST, self.pw['db'])]
        for db in ('keystone', 'glance', 'placement', 'nova_api',
                   'nova_cell0', 'nova_cell1', 'cinder'):
            sql.append('CREATE DATABASE %s;' % db)
            sql.append("GRANT ALL ON %s.* TO 'nit'@'%s';" % (db, HOST))
        self.run(['mariadb', '--no-defaults', '--socket=' + self.sock,
                  '-uroot', '-e', ' '.join(sql)])

    def install_mariadb_db(self, data):
        """Create MariaDB's system tables in ``data``; tried twice.

        ``mariadb-install-db`` bootstraps a server of its own; it once
        failed in CI (exit 1) beside the other deployment job's, with
        nothing else to show for it. A failure is noted in full, the
        half-made data directory removed and the bootstrap run once more
        (the job's last line says so); a second failure stops the job with
        its output. Name resolution is skipped, as the server itself skips
        it (``--skip-name-resolve``): every account is made for an address.
        """
        argv = ['mariadb-install-db', '--no-defaults', '--user=root',
                '--datadir=' + data,
                '--auth-root-authentication-method=socket',
                '--skip-test-db', '--skip-name-resolve']
        try:
            self.run(argv)
        except Failure as e:
            self.note('MariaDB\'s bootstrap failed; once more, in a new '
                      'data directory. It said:\n%s' % e)
            self.got_over.append('MariaDB\'s bootstrap failed once: %s'
                                 % said(e))
            shutil.rmtree(data)
            self.run(argv)

    def start_rabbitmq(self):
        d = os.path.join(self.work, 'rabbit')
        os.makedirs(d)
        with open(os.path.join(d, 'enabled_plugins'), 'w') as f:
            f.write('[].\n')
        self.rabbit_env = {
            'HOME': d,
            'RABBITMQ_NODENAME': 'nit@localhost',
            'RABBITMQ_NODE_IP_ADDRESS': HOST,
            'RABBITMQ_NODE_PORT': str(self.port['rabbit']),
            'RABBITMQ_DIST_PORT': str(self.port['rabbit_dist']),
            'ERL_EPMD_ADDRESS': HOST,
            'ERL_EPMD_PORT': str(self.port['epmd']),
            'RABBITMQ_MNESIA_BASE': os.path.join(d, 'mnesia'),
            'RABBITMQ_LOG_BASE': os.path.join(d, 'log'),
            'RABBITMQ_LOGS': '-',
            'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(
                d, 'enabled_plugins'),
            'RABBITMQ_PID_FILE': os.path.join(d, 'rabbit.pid'),
        }
        # Our own epmd, in the foreground, so that it is ours to stop.
        self.start('epmd', ['epmd', '-port', str(self.port['epmd'])],
                   env={'ERL_EPMD_ADDRESS': HOST})
        self.start('rabbitmq', ['/usr/lib/rabbitmq/bin/rabbitmq-server'],
                   env=self.rabbit_env)
        ctl = ['/usr/lib/rabbitmq/bin/rabbitmqctl', '-n', 'nit@localhost']
        # await_startup fails at once while the node is not yet known.
        self.wait_for('rabbitmq', lambda: self.run(
            ctl + ['--timeout', '10', 'await_startup'], env=self.rabbit_env,
            check=False, timeout=60).returncode == 0, 120, 2)
        self.run(ctl + ['add_user', 'nit', self.pw['rabbit']],
                 env=self.rabbit_env)
        for vhost in ('nova_api', 'nova_cell1', 'cinder'):
            self.run(ctl + ['add_vhost', vhost], env=self.rabbit_env)
            self.run(ctl + ['set_permissions', '-p', vhost, 'nit', '.*',
                            '.*', '.*'], env=self.rabbit_env)

    def start_neutron_standin(self):
        self.start('neutron-standin', [
            sys.executable, os.path.join(HERE, 'neutron_standin.py'),
            str(self.port['neutron'])])
        self.wait_http('http://%s:%d/' % (HOST, self.port['neutron']))
