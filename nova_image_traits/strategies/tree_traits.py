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

from nova_image_traits import exception
from nova_image_traits import flavor
from nova_image_traits.i18n import _
from nova_image_traits import placement
from nova_image_traits import requirements
from nova_image_traits.strategies import base


#: in_tree on GET /allocation_candidates (1.31); provider_summaries list
#: every provider of a candidate's tree, with its traits, since 1.29.
SUMMARIES_VERSION = '1.31'


class TreeTraitsStrategy(base.Strategy):
    """Compare with the union of the traits of every provider in the tree.

    The rebuild is accepted when every trait the new image requires is
    found on some provider of the compute node's tree, whatever its request
    group: the root or any nested provider, allocated to the server or not,
    and no provider of the tree has a trait it forbids. Sharing providers
    are outside the tree and do not count.

    Requests: one for the root's traits, which settles the common case.
    When the root lacks one trait, one
    ``GET /resource_providers?in_tree=<root>&required=<T>``. When it lacks
    several, one ``GET /allocation_candidates?in_tree=<root>&limit=1`` for
    the flavor's own resources, whose provider summaries carry the traits
    of every provider in the tree; only if that finds no candidate (a full
    host) is each missing trait asked about in turn. A forbidden trait the
    root does not have costs one ``in_tree`` request. None of this grows
    with the size of the tree.
    """

    name = 'tree_traits'
    rule = 'some provider in the compute node tree must have each of them'
    lacks = _("missing on every resource provider of this server's host")
    judged = _("the resource providers of this server's host")

    def evaluate(self, ctx):
        root = ctx.request.compute_node_uuid
        root_traits = self.provider_traits(ctx, root)
        required = frozenset(r.trait for r in ctx.of(forbidden=False))
        providers = [root]
        missing = self._missing(ctx, root, set(required - root_traits),
                                providers)
        present = set(root_traits)
        for r in ctx.of(forbidden=True):
            if r.trait not in present and self._in_tree(ctx, root, r.trait,
                                                        providers):
                present.add(r.trait)
        traits = (required - missing) | present
        return base.judged(requirements.unmet(ctx.requirements, traits),
                           providers)

    def _missing(self, ctx, root, missing, providers):
        """Which of ``missing`` no provider of the tree has."""
        if len(missing) > 1:
            summaries = self._tree_summaries(ctx, root)
            if summaries is not None:
                for uuid, summary in sorted(summaries.items()):
                    found = missing & set(summary.get('traits') or ())
                    if found:
                        missing -= found
                        providers.append(str(uuid))
                return missing
        for trait in sorted(missing):
            if self._in_tree(ctx, root, trait, providers):
                missing.discard(trait)
        return missing

    def _in_tree(self, ctx, root, trait, providers):
        """Whether a provider of the tree has ``trait`` (one request)."""
        try:
            found = self.providers(
                ctx, [('in_tree', root), ('required', trait)], '1.18')
        except exception.PlacementUnknownTraits:
            # No provider anywhere has a trait placement does not know.
            return False
        for uuid in found:
            if uuid not in providers:
                providers.append(uuid)
        return bool(found)

    def _tree_summaries(self, ctx, root):
        """Return {uuid: summary} for every provider in the tree, or None.

        None when placement is too old, the flavor asks for no unsuffixed
        resources, or no candidate fits (the host is full).
        """
        if not ctx.placement.supports(SUMMARIES_VERSION):
            return None
        unsuffixed = self.resource_query(ctx).unsuffixed
        if not unsuffixed.resources:
            return None
        resources_only = flavor.ResourceQuery(groups=(
            flavor.RequestGroup('', unsuffixed.resources),))
        candidates, summaries = self.allocation_candidates(
            ctx, placement.candidate_params(resources_only, root=root,
                                            limit=1), SUMMARIES_VERSION)
        if not candidates:
            return None
        for summary in summaries.values():
            placement.require(summary, dict, '/allocation_candidates',
                              'a provider summary')
        return summaries
