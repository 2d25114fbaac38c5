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
"""Read-only access to placement, the way nova's report client reaches it.

:mod:`.cache`
    clients built from ``[placement]``, one per effective setting;
:mod:`.client`
    the client: microversions, keystoneauth's retries fitted into a
    decision's deadline;
:mod:`.workers`
    the threads that let a decision stop waiting;
:mod:`.session`
    one decision's requests, counted, with every failure named;
:mod:`.query`
    request parameters and answers' types, with no I/O.

The names below are the package's interface.
"""

from nova_image_traits.placement.cache import build_adapter
from nova_image_traits.placement.cache import get_client
from nova_image_traits.placement.cache import reset_clients
from nova_image_traits.placement.cache import settings
from nova_image_traits.placement.client import PlacementClient
from nova_image_traits.placement.query import candidate_params
from nova_image_traits.placement.query import candidate_version
from nova_image_traits.placement.query import format_version
from nova_image_traits.placement.query import parse_version
from nova_image_traits.placement.query import quote
from nova_image_traits.placement.query import require
from nova_image_traits.placement.session import PlacementSession

__all__ = [
    'PlacementClient', 'PlacementSession', 'build_adapter',
    'candidate_params', 'candidate_version', 'format_version', 'get_client',
    'parse_version', 'quote', 'require', 'reset_clients', 'settings',
]
