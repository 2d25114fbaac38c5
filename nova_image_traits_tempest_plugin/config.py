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
"""The plugin's options, in tempest.conf's [nova_image_traits]."""

from oslo_config import cfg

group = cfg.OptGroup(name='nova_image_traits',
                     title='nova-image-traits rebuild checks')

opts = [
    cfg.BoolOpt('enabled', default=True,
                help='Whether the cloud runs nova-image-traits-conductor '
                     '(or ImageTraitsFilter) at all.'),
    cfg.BoolOpt('precheck', default=False,
                help='Whether nova-api runs the image_traits_precheck paste '
                     'filter, which refuses a rebuild with a 400 before '
                     'anything about the server changes. When true, the '
                     'test of the API refusal runs and the test of a '
                     'conductor refusal of an image-backed server is '
                     'skipped (the API refuses first).'),
    cfg.StrOpt('strategy', default='held_providers',
               help="The cloud's [image_traits] strategy. With 'reject', a "
                    'trait added to the compute node after the boot does '
                    'not make a rebuild acceptable.'),
]
