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
"""Tests that run the real nova services with nova-image-traits.

NOTE: like ``nova/tests/__init__.py``, decide eventlet monkey patching
before anything else is imported (OS_NOVA_DISABLE_EVENTLET_PATCHING=1
selects native threads).
"""

from nova import monkey_patch

# NOTE(series 2025.1): nova 31 has no patch(); importing nova.monkey_patch
# patches by itself, unless OS_NOVA_DISABLE_EVENTLET_PATCHING is set.
if hasattr(monkey_patch, 'patch'):
    monkey_patch.patch()
