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

# Sphinx configuration of the nova-image-traits documentation.
#
# The docs build installs only requirements.txt, doc/requirements.txt and the
# package itself, not nova: nothing here may import a module that imports
# nova (nova_image_traits.filters, .conductor, .api, .cmd.conductor,
# .nova_request, .boot_requirements, .boot_query, .attribution).

import os
import sys

# NOTE(founders): _exts/scenario_schema.py renders the scenario format from
# nova_image_traits.simulate.schema, read from this source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, '_exts'), os.path.join(HERE, '..', '..')]

# -- General configuration ---------------------------------------------------

extensions = [
    'openstackdocstheme',
    # .. show-options:: reads the oslo.config.opts entry point.
    'oslo_config.sphinxext',
    # Writes _static/nova-image-traits.conf.sample at build time.
    'oslo_config.sphinxconfiggen',
    # .. scenario-fields:: and .. scenario-schema:: (the scenario format).
    'scenario_schema',
]

config_generator_config_file = (
    '../../etc/nova-image-traits/nova-image-traits-config-generator.conf')
sample_config_basename = '_static/nova-image-traits'

# openstackdocstheme options
openstackdocs_repo_name = 'x/nova-image-traits'
openstackdocs_bug_project = 'nova-image-traits'
openstackdocs_bug_tag = 'doc'
openstackdocs_auto_name = False
openstackdocs_use_storyboard = False

templates_path = []
source_suffix = '.rst'
master_doc = 'index'

project = 'nova-image-traits'
copyright = '2026, nova-image-traits developers'

exclude_patterns = []
add_function_parentheses = True
add_module_names = True
pygments_style = 'native'

# -- Options for HTML output -------------------------------------------------

html_theme = 'openstackdocs'
htmlhelp_basename = 'nova-image-traitsdoc'
