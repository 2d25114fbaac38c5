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
"""Who reads the host's detail in a refused rebuild."""

from oslo_policy import policy

#: The rule that lets a caller read what a refused rebuild found of the
#: host: the traits it lacks and the image requirements it does not meet.
HOST_DETAIL = 'os_compute_api:image_traits:refusal:host_detail'

rules = [
    policy.DocumentedRuleDefault(
        name=HOST_DETAIL,
        check_str='rule:context_is_admin',
        description='Read the host detail of a rebuild the image traits '
                    'pre-check refuses: which traits the server\'s host '
                    'lacks and which requirements of the new image it does '
                    'not meet. A caller the rule does not allow reads a '
                    'reason that names nothing of the host. Admin only by '
                    'default, like nova\'s '
                    'os_compute_api:os-instance-actions:events:details, '
                    'because the traits of a host tell about the '
                    'deployment (dedicated tenants, compliance, racks, '
                    'licences, CPU flags). The conductor\'s fault message '
                    'never names them; its details, which nova shows to '
                    'admins only, do.',
        operations=[{'method': 'POST',
                     'path': '/servers/{server_id}/action (rebuild)'}],
        scope_types=['project']),
]


def list_rules():
    return rules
