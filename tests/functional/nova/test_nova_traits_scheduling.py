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
"""Nova's own trait scheduling tests, with ImageTraitsFilter enabled.

The test methods are nova's, inherited unchanged: enabling the filter at
its default settings must not change what nova does at boot or on rebuild.
"""

from nova.tests.functional import test_servers

from tests.functional.nova import base


class TraitsBasedSchedulingWithFilterTest(
        base.HarnessMixin, test_servers.TraitsBasedSchedulingTest):
    """``TraitsBasedSchedulingTest`` with ``ImageTraitsFilter`` enabled."""

    ENABLE_IMAGE_TRAITS_FILTER = True

    def setUp(self):
        super().setUp()
        # The filter really is in the running scheduler.
        names = [type(f).__name__
                 for f in self.scheduler_service.manager.host_manager
                 .enabled_filters]
        self.assertIn(base.FILTER_NAME, names)
