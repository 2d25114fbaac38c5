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

from nova_image_traits.i18n import _
from nova_image_traits import requirements
from nova_image_traits.strategies import base


class RootTraitsStrategy(base.Strategy):
    """Compare with the traits of the compute node's root provider.

    The rebuild is accepted when the compute node resource provider (the root
    of its tree) has every trait the new image requires, whatever the
    request group it belongs to, and none it forbids. Traits on nested
    providers (NUMA nodes, GPUs, NICs) and sharing providers do not count.
    One placement request: ``GET /resource_providers/{uuid}/traits``.
    """

    name = 'root_traits'
    rule = 'the compute node itself must have them'
    lacks = _("missing on this server's compute node")
    judged = _("this server's compute node")

    def evaluate(self, ctx):
        root = ctx.request.compute_node_uuid
        traits = self.provider_traits(ctx, root)
        return base.judged(requirements.unmet(ctx.requirements, traits),
                           [root])
