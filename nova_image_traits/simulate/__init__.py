#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""The simulator behind ``nova-image-traits simulate``.

A scenario (:mod:`.scenario`, its format in :mod:`.schema`) is loaded into
a real placement on loopback (:mod:`.server`, :mod:`.cloud`) and every
strategy judges its rebuild cases (:mod:`.run`); :mod:`.tables` and
:mod:`.dot` show the verdicts. The placement needs the ``simulate`` extra
(``openstack-placement``). Nothing on the decision path imports this
package, so an install may leave it out.
"""
