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


class AllocationTraitsStrategy(base.Strategy):
    """Nova's own rule: the traits of the providers holding the allocations.

    The rebuild is accepted when every trait the new image requires is found
    on some provider that holds the server's allocations: the compute node,
    an allocated nested provider or a sharing provider, and none of them has
    a trait it forbids, whatever the request group. This is the rule of
    nova's ``ComputeTaskManager._validate_image_traits_for_rebuild``, but the
    data is read fresh from placement (nova reads a cache up to
    ``[compute] resource_provider_association_refresh`` seconds old), nothing
    is ever written, and a failed read is an error, not "every trait is
    missing".

    Requests: ``GET /allocations/{server}``, then the traits of the allocated
    providers, the compute node first, stopping as soon as every trait is
    found, unless a forbidden trait asks for them all.
    """

    name = 'allocation_traits'
    rule = 'the providers holding the server\'s resources must have them'
    lacks = _('missing on the resources allocated to this server')
    judged = _('the resources allocated to this server')

    def evaluate(self, ctx):
        allocations = self.held_allocations(ctx)
        if not allocations:
            return base.NO_ALLOCATIONS
        root = ctx.request.compute_node_uuid
        ordered = sorted(allocations, key=lambda u: (u != root, u))
        missing = set(ctx.required)
        every = bool(ctx.of(forbidden=True))
        traits = set()
        consulted = []
        for rp_uuid in ordered:
            if not missing and not every:
                break
            consulted.append(str(rp_uuid))
            found = self.provider_traits(ctx, rp_uuid)
            traits |= found
            missing -= found
        return base.judged(requirements.unmet(ctx.requirements, traits),
                           consulted)
