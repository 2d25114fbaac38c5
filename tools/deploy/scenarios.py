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
"""The rebuilds of ``expectations.py``, driven with the ``openstack`` client.

``demo`` (a member of project ``demo``) boots, rebuilds and looks at its
servers (one of them volume-backed); ``admin`` makes the images, the
traits and the nested provider, steers the boots to a host by disabling
the other compute service, and resets a refused server to ACTIVE. After
each refusal, nova's databases are read directly (``Deployment.image_state``,
one query) for what they keep of the refused image.

:class:`Scenarios` is made of the modules beside this one:
``cloud_contents.py`` (the flavor, images, traits, providers and
servers), ``rebuild_checks.py`` (what every rebuild case shares),
``strategy_cases.py`` (the cases of one strategy), ``filter_alone.py``
(the refusals by ImageTraitsFilter alone), ``isolation_case.py`` (a host
isolated for a trait) and ``tempest_run.py``; the check that no log holds
a secret is here.
"""

import os
import re

import cloud_contents
import filter_alone
import isolation_case
from processes import Failure
import rebuild_checks
import strategy_cases
import tempest_run

FERNET_RE = re.compile(r'gAAAAA[A-Za-z0-9_\-]{40,}')


class Scenarios(cloud_contents.CloudContents,
                rebuild_checks.RebuildChecks,
                strategy_cases.StrategyCases,
                filter_alone.FilterAlone,
                isolation_case.IsolationCase,
                tempest_run.Tempest):
    """The phases run in the cloud of Deployment DEP, checked by TABLE."""

    def __init__(self, dep, table):
        self.dep = dep
        self.table = table
        self.results = []
        #: server id: the server as an admin saw it once booted
        self.booted = {}

    def admin(self, *args):
        return self.dep.osj('admin', *args)

    def user(self, *args):
        return self.dep.osj('demo', *args)

    # -- logs ------------------------------------------------------------

    def check_secrets(self):
        """No password and no token in any log, with debug on everywhere."""
        found = []
        for root, _dirs, files in os.walk(self.dep.logs):
            for name in files:
                path = os.path.join(root, name)
                with open(path, errors='replace') as f:
                    text = f.read()
                for key, value in self.dep.pw.items():
                    if value in text:
                        found.append('%s password in %s' % (key, path))
                if FERNET_RE.search(text):
                    found.append('a token in %s' % path)
        if found:
            raise Failure('secrets in the logs: %s' % found)
        self.dep.note('no password and no token in %s' % self.dep.logs)
