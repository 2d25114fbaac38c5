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

from nova_image_traits import decision
from nova_image_traits import exception
from nova_image_traits import placement
from nova_image_traits.strategies import base


class TreeTraitsStrategy(base.Strategy):
    """Compare with the union of the traits of every provider in the tree.

    The rebuild is accepted when every trait the new image requires is
    found on some provider of the compute node's tree: the root or any
    nested provider, allocated to the server or not. Sharing providers are
    outside the tree and do not count.

    Requests: one for the root's traits; then, for each required trait the
    root lacks, one ``GET /resource_providers?in_tree=<root>&required=<T>``
    (microversion 1.18). The cost does not grow with the size of the tree.
    """

    name = 'tree_traits'
    rule = 'some provider in the compute node tree must have each of them'

    def evaluate(self, ctx):
        root = ctx.request.compute_node_uuid
        missing = set(ctx.required - self.provider_traits(ctx, root))
        providers = [root]
        for trait in sorted(missing):
            url = '/resource_providers'
            try:
                body = ctx.placement.get(
                    url, [('in_tree', root), ('required', trait)],
                    version='1.18')
            except exception.PlacementUnknownTraits:
                # No provider anywhere has a trait placement does not know.
                continue
            found = placement.require(
                body.get('resource_providers'), list, url,
                'resource_providers')
            if found:
                missing.discard(trait)
                for rp in found:
                    uuid = rp.get('uuid') if isinstance(rp, dict) else None
                    if uuid and uuid not in providers:
                        providers.append(str(uuid))
        return decision.Verdict(
            decision.REJECT if missing else decision.ACCEPT,
            missing=frozenset(missing), providers=tuple(providers))
