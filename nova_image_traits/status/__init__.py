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
"""The checks of ``nova-image-traits-status upgrade check``.

:mod:`nova_image_traits.cmd.status` is the command; the checks live here,
one module per thing they look at: :mod:`.config` (nova.conf alone),
:mod:`.conductor` (this host's processes and the installed nova),
:mod:`.derivation` (the installed nova's code deriving requirements) and
:mod:`.cloud` (placement and the image service).
"""
