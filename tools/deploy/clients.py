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
"""The ``openstack`` client, run as the cloud's admin or as its user.

``admin`` is Keystone's bootstrap admin (project ``admin``); ``demo`` is
a member and reader of project ``demo``. Every call is a command the
deployment runs and logs (:meth:`processes.Processes.run`), with compute
API 2.95.
"""

import json
import os

from processes import BIN


class Clients:
    """``openstack`` commands, as ``admin`` or as ``demo``."""

    def creds(self, who):
        project = 'admin' if who == 'admin' else 'demo'
        return {'OS_AUTH_URL': self.auth_url, 'OS_USERNAME': who,
                'OS_PASSWORD': self.pw[who], 'OS_PROJECT_NAME': project,
                'OS_USER_DOMAIN_NAME': 'Default',
                'OS_PROJECT_DOMAIN_NAME': 'Default',
                'OS_REGION_NAME': 'RegionOne', 'OS_INTERFACE': 'public',
                'OS_IDENTITY_API_VERSION': '3',
                'OS_COMPUTE_API_VERSION': '2.95'}

    def osc(self, who, *args, check=True):
        """Run the ``openstack`` client as ``admin`` or as ``demo``."""
        return self.run([os.path.join(BIN, 'openstack')] + list(args),
                        env=self.creds(who), check=check)

    def reset_to_active(self, server):
        """``openstack server set --state active``, as an admin."""
        # NOTE(series 2025.1): python-openstackclient 7.5.0 neither asks
        # for confirmation nor knows --auto-approve; later ones ask.
        if self._auto_approve is None:
            helptext = self.osc('admin', 'server', 'set', '--help').stdout
            self._auto_approve = '--auto-approve' in helptext
        self.osc('admin', 'server', 'set', '--state', 'active', server,
                 *(['--auto-approve'] if self._auto_approve else []))

    def osj(self, who, *args):
        out = self.osc(who, *(list(args) + ['-f', 'json'])).stdout
        return json.loads(out) if out.strip() else None
