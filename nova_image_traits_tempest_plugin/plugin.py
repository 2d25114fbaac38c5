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
"""The tempest plugin of nova-image-traits (entry point tempest.test_plugins).

Test code only: nothing in the nova_image_traits package imports it.
"""

import os

from tempest import config
from tempest.test_discover import plugins

from nova_image_traits_tempest_plugin import config as nit_config


class NovaImageTraitsTempestPlugin(plugins.TempestPlugin):

    def load_tests(self):
        base_path = os.path.dirname(os.path.dirname(os.path.abspath(
            __file__)))
        test_dir = os.path.join(base_path, 'nova_image_traits_tempest_plugin',
                                'tests')
        return test_dir, base_path

    def register_opts(self, conf):
        config.register_opt_group(conf, nit_config.group, nit_config.opts)

    def get_opt_lists(self):
        return [(nit_config.group.name, nit_config.opts)]
