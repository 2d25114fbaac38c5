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

import itertools
import math

from nova_image_traits import decision
from nova_image_traits.i18n import _
from nova_image_traits.strategies import base

#: Above this many numbered groups sharing resource classes with the
#: unsuffixed group, the split of the allocations is not searched.
MAX_AMBIGUOUS_GROUPS = 6
#: Above this many ways to place those groups, it is not searched either.
MAX_SPLITS = 4096
#: The trait placement gives the providers it shares through aggregates.
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'


def unsuffixed_holders(held, query):
    """Return the possible sets of providers that serve the unsuffixed group.

    Placement does not record which request group an allocation came from,
    so it is worked out from the boot query. A provider serves the
    unsuffixed group when it holds a resource class that group asks for
    and no numbered group accounts for that holding. Each numbered group
    is served by one provider, so when numbered groups ask for classes the
    unsuffixed group asks for too, every way of assigning them to the
    providers that hold enough is tried.

    :param held: ``{rp_uuid: {rc: amount}}``, the server's allocations
    :param query: the :class:`~nova_image_traits.flavor.ResourceQuery`
    :returns: a list of distinct frozensets of provider UUIDs, sorted; one
        set when the allocations leave no doubt, several when they could
        have come from different splits, none when no split explains them
        (then the allocations are not those of this query)
    """
    wanted = set(query.unsuffixed.resources)
    overlapping = [g for g in query.numbered if set(g.resources) & wanted]
    if not overlapping:
        return [frozenset(rp for rp, res in held.items()
                          if set(res) & wanted)]
    # NOTE(founders): each numbered group can only have come from a provider
    # holding enough of every class it asks for.
    options = [[rp for rp in sorted(held)
                if all(held[rp].get(rc, 0) >= n
                       for rc, n in g.resources.items())]
               for g in overlapping]
    count = math.prod(len(opts) for opts in options)
    if len(overlapping) > MAX_AMBIGUOUS_GROUPS or not 0 < count <= MAX_SPLITS:
        return []
    found = set()
    for choice in itertools.product(*options):
        left = {rp: dict(res) for rp, res in held.items()}
        for group, rp in zip(overlapping, choice):
            for rc, amount in group.resources.items():
                left[rp][rc] = left[rp].get(rc, 0) - amount
        # NOTE(founders): a split that takes more than a provider holds is
        # not one placement could have made.
        if all(n >= 0 for res in left.values() for n in res.values()):
            found.add(frozenset(rp for rp, res in left.items()
                                if any(res.get(rc, 0) > 0 for rc in wanted)))
    return sorted(found, key=sorted)


def no_split_detail(held, query):
    """Why :func:`unsuffixed_holders` found no provider: the detail."""
    wanted = set(query.unsuffixed.resources)
    overlapping = [g for g in query.numbered if set(g.resources) & wanted]
    if len(overlapping) > MAX_AMBIGUOUS_GROUPS:
        return ('the split of the allocations was not searched: %d numbered '
                'groups ask for classes of the unsuffixed group, more than '
                '%d' % (len(overlapping), MAX_AMBIGUOUS_GROUPS))
    count = math.prod(
        sum(1 for res in held.values()
            if all(res.get(rc, 0) >= n for rc, n in g.resources.items()))
        for g in overlapping)
    if count > MAX_SPLITS:
        return ('the split of the allocations was not searched: %d ways to '
                'place the numbered groups, more than %d' % (count,
                                                             MAX_SPLITS))
    if overlapping:
        return ('no split of the allocations between the numbered groups '
                'leaves a provider serving the unsuffixed group (%s): the '
                'allocations are not those of this flavor' % ', '.join(
                    sorted(wanted)))
    return ('no provider holds a class the unsuffixed group asks for (%s): '
            'the allocations are not those of this flavor' % ', '.join(
                sorted(wanted)))


class HeldProvidersStrategy(base.Strategy):
    """Judge the providers the rebuilt server keeps, by placement's rule.

    A rebuild keeps the server's allocations, so the rebuilt server uses
    exactly the providers it holds now. At boot, placement requires each
    of the image's traits on one of the providers that serve the
    unsuffixed request group, where nova puts image traits: the compute
    node for ``VCPU``, ``MEMORY_MB`` and ``DISK_GB``, a nested provider
    serving an unsuffixed resource (a NUMA node, a pGPU for an unsuffixed
    ``resources:VGPU=1``), a sharing provider serving the disk. This
    strategy applies that rule to those providers: the rebuild is accepted
    when each trait is on one of them. Providers that serve only numbered
    groups, and providers the server does not hold, do not count.

    Only the compute node's tree and sharing providers count, as in a
    placement candidate: while a move is unfinished (an evacuation whose
    source host is still down) the server may also hold allocations on
    another compute node, whose traits say nothing about this one.

    Capacity plays no part, so a full host is judged like any other. The
    verdict is inconclusive only when placement holds no allocations for
    the server, when none of them serves the unsuffixed group, or when
    numbered groups asking for the same resource classes make the split of
    the allocations ambiguous and the candidates disagree.

    Requests: ``GET /allocations/{server}``, then the traits of each
    provider serving the unsuffixed group, the compute node first,
    stopping as soon as every trait is found: two requests when the compute
    node serves the whole group, three when it spans two providers. Only
    when the allocations cannot be one placement candidate (the compute
    node holds nothing, or a class is held twice, as an unfinished move
    does) and a trait is found on a nested provider, one more:
    ``GET /resource_providers?in_tree=<node>``, to check that the provider
    belongs to this compute node. None of it depends on the size of the
    cloud.
    """

    name = 'held_providers'
    rule = ("the providers holding the server's unsuffixed resources must "
            "have them")
    lacks = _('missing on the resources this server uses')

    def evaluate(self, ctx):
        held = self.held_allocations(ctx)
        if not held:
            return base.NO_ALLOCATIONS
        query = self.resource_query(ctx)
        splits = [s for s in unsuffixed_holders(held, query) if s]
        if not splits:
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=tuple(sorted(held)),
                detail=no_split_detail(held, query))
        root = ctx.request.compute_node_uuid
        # NOTE(founders): in one placement candidate each unsuffixed class
        # comes from one provider, and every provider but sharing ones is in
        # the tree of the compute node when the compute node holds a part. Only
        # when the allocations cannot be one candidate (an unfinished move
        # holds them twice, or the node holds nothing) is the tree asked for.
        wanted = set(query.unsuffixed.resources)
        held_twice = any(sum(1 for res in held.values() if res.get(rc))
                         > 1 for rc in wanted)
        state = {'traits': {}, 'tree': None,
                 'anchored': root in held and not held_twice}
        missing = [self._judge(ctx, split, root, state) for split in splits]
        consulted = tuple(state['traits'])
        if not any(missing):
            return decision.Verdict(decision.ACCEPT, providers=consulted)
        if all(missing):
            return decision.Verdict(
                decision.REJECT, missing=frozenset().union(*missing),
                providers=consulted,
                detail='not on the providers serving the unsuffixed group')
        return decision.Verdict(
            decision.INCONCLUSIVE, providers=consulted,
            detail=('%d ways the allocations could split between the '
                    'request groups disagree' % len(splits)))

    def _judge(self, ctx, split, root, state):
        """Return the traits missing on the providers of one split."""
        missing = set(ctx.required)
        for rp in sorted(split, key=lambda u: (u != root, u)):
            if not missing:
                break
            traits = state['traits'].get(rp)
            if traits is None:
                traits = state['traits'][rp] = self.provider_traits(ctx, rp)
            found = missing & traits
            if (found and rp != root and not state['anchored'] and
                    SHARING_TRAIT not in traits and
                    rp not in self._tree(ctx, root, state)):
                # NOTE(founders): another compute node's provider, held while a
                # move is unfinished: not what the rebuilt server will use.
                continue
            missing -= found
        return missing

    def _tree(self, ctx, root, state):
        """The UUIDs of the compute node's tree (one request, once)."""
        if state['tree'] is None:
            state['tree'] = frozenset(
                self.providers(ctx, [('in_tree', root)], '1.14'))
        return state['tree']
