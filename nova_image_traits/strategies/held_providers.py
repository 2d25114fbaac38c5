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
from nova_image_traits import placement
from nova_image_traits import requirements
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
    trait of the unsuffixed request group, where nova puts the image's own
    and those its ``ResourceRequest`` derives from the image, on one of
    the providers that serve that group: the compute node for ``VCPU``,
    ``MEMORY_MB`` and ``DISK_GB``, a nested provider serving an unsuffixed
    resource (a NUMA node, a pGPU for an unsuffixed ``resources:VGPU=1``),
    a sharing provider serving the disk; and it forbids a trait of that
    group on every one of them. Traits the scheduler's request filters add
    (``root_required``) must be on the compute node itself. This strategy
    applies those rules to the providers the server holds. Providers that
    serve only numbered groups, and providers the server does not hold, do
    not count.

    Only the compute node's tree and the sharing providers of its
    aggregates count, as in a placement candidate: while a move is
    unfinished (an evacuation whose source host is still down) the server
    may also hold allocations on another compute node, or on another
    pool, whose traits say nothing about this one.

    Capacity plays no part, so a full host is judged like any other. The
    verdict is inconclusive when placement holds no allocations for the
    server, when none of them is on this compute node (a failed move left
    them elsewhere), when none serves the unsuffixed group, or when
    numbered groups asking for the same resource classes make the split of
    the allocations ambiguous and the candidates disagree.

    Requests: ``GET /allocations/{server}``, then the traits of each
    provider serving the unsuffixed group, the compute node first,
    stopping as soon as every trait is found: two requests when the compute
    node serves the whole group, three when it spans two providers. Only
    when the allocations cannot be one placement candidate (the compute
    node holds nothing, or a class is held twice, as an unfinished move
    does), one more, ``GET /resource_providers?in_tree=<node>``, to check
    that a nested provider belongs to this compute node, or, before a
    refusal when the node holds nothing, that the server holds anything
    here; and during a move, for a sharing provider, two: its aggregates,
    and the node's tree's members of them. None of it depends on the size
    of the cloud.
    """

    name = 'held_providers'
    rule = ("the providers holding the server's unsuffixed resources must "
            "have them")
    lacks = _('missing on the resources this server uses')
    judged = _('the resources this server uses')

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
        state = {'traits': {}, 'tree': None, 'aggregates': {},
                 'anchored': root in held and not held_twice,
                 'moving': held_twice}
        unmet = [self._judge(ctx, split, root, state) for split in splits]
        consulted = tuple(state['traits'])
        if not any(unmet):
            return decision.Verdict(decision.ACCEPT, providers=consulted)
        if root not in held and not set(held) & self._tree(ctx, root, state):
            # NOTE(founders): a failed resize or migration can leave a server
            # holding nothing here; what it holds elsewhere says nothing of
            # this host. Asked only before a refusal: an acceptance rests on
            # providers already found in the tree.
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=tuple(sorted(held)),
                detail=('none of the allocations of the server is on this '
                        'compute node'))
        if all(unmet):
            return base.judged(
                set().union(*unmet), consulted,
                detail='not met by the providers serving the unsuffixed '
                       'group or by the compute node')
        return decision.Verdict(
            decision.INCONCLUSIVE, providers=consulted,
            detail=('%d ways the allocations could split between the '
                    'request groups disagree' % len(splits)))

    def _judge(self, ctx, split, root, state):
        """Return the requirements unmet on the providers of one split."""
        unmet = set(requirements.unmet(ctx.of(scope=requirements.ROOT),
                                       self._traits(ctx, root, state))
                    if ctx.of(scope=requirements.ROOT) else ())
        group = ctx.of(scope=requirements.UNSUFFIXED)
        wanted = {r.trait for r in group if not r.forbidden}
        forbidden = {r.trait for r in group if r.forbidden}
        found = set()
        for rp in sorted(split, key=lambda u: (u != root, u)):
            if not forbidden and wanted <= found:
                break
            traits = self._traits(ctx, rp, state)
            if (traits & (wanted | forbidden) and rp != root and
                    not state['anchored'] and
                    not self._belongs(ctx, rp, traits, root, state)):
                # NOTE(founders): another compute node's provider, or a pool
                # this node does not share, held while a move is unfinished:
                # not what the rebuilt server will use.
                continue
            found |= traits
        return unmet | set(requirements.unmet(group, found))

    def _traits(self, ctx, rp, state):
        """The traits of one provider (one request, once)."""
        if rp not in state['traits']:
            state['traits'][rp] = self.provider_traits(ctx, rp)
        return state['traits'][rp]

    def _belongs(self, ctx, rp, traits, root, state):
        """Whether a placement candidate for ``root`` could use ``rp``.

        A sharing provider serves a tree when a provider of that tree is
        in one of its aggregates, as placement anchors it
        (``anchors_for_sharing_providers``): one request for its
        aggregates, one for the tree's members of them.
        """
        if SHARING_TRAIT not in traits:
            return rp in self._tree(ctx, root, state)
        if not state['moving']:
            # NOTE(founders): nothing held twice: the allocations are one
            # candidate, and placement put the pool in it for this tree.
            return True
        aggregates = self._aggregates(ctx, rp, state)
        return bool(aggregates) and bool(self.providers(
            ctx, [('in_tree', root),
                  ('member_of', 'in:' + ','.join(sorted(aggregates)))],
            '1.14'))

    def _tree(self, ctx, root, state):
        """The UUIDs of the compute node's tree (one request, once)."""
        if state['tree'] is None:
            state['tree'] = frozenset(
                self.providers(ctx, [('in_tree', root)], '1.14'))
        return state['tree']

    def _aggregates(self, ctx, rp, state):
        """The aggregates of one provider (one request, once)."""
        if rp not in state['aggregates']:
            url = '/resource_providers/%s/aggregates' % placement.quote(rp)
            body = ctx.placement.get(url, version='1.1')
            state['aggregates'][rp] = frozenset(
                str(a) for a in placement.require(
                    body.get('aggregates'), list, url, 'aggregates'))
        return state['aggregates'][rp]
