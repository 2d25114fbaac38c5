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

# Sphinx configuration of the nova-image-traits release notes (reno).

# -- General configuration ---------------------------------------------------

extensions = [
    'openstackdocstheme',
    'reno.sphinxext',
]

# openstackdocstheme options
openstackdocs_repo_name = 'x/nova-image-traits'
openstackdocs_bug_project = 'nova-image-traits'
openstackdocs_bug_tag = 'releasenotes'
openstackdocs_auto_name = False
openstackdocs_use_storyboard = False

templates_path = []
source_suffix = '.rst'
master_doc = 'index'

project = 'nova-image-traits Release Notes'
copyright = '2026, nova-image-traits developers'

# Release notes do not need a version number in the title.
version = ''
release = ''

exclude_patterns = []
pygments_style = 'native'

# -- Options for HTML output -------------------------------------------------

html_theme = 'openstackdocs'
htmlhelp_basename = 'NovaImageTraitsReleaseNotesdoc'

# -- Options for Internationalization output ---------------------------------

locale_dirs = ['locale/']
