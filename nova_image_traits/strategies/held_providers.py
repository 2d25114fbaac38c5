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

from nova_image_traits import decision
from nova_image_traits.i18n import _
from nova_image_traits.strategies import base

#: Above this many numbered groups sharing resource classes with the
#: unsuffixed group, the split of the allocations is not searched.
MAX_AMBIGUOUS_GROUPS = 6


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
    if len(overlapping) > MAX_AMBIGUOUS_GROUPS:
        return []
    found = set()
    providers = sorted(held)
    for choice in itertools.product(providers, repeat=len(overlapping)):
        left = {rp: dict(res) for rp, res in held.items()}
        fits = True
        for group, rp in zip(overlapping, choice):
            for rc, amount in group.resources.items():
                if left[rp].get(rc, 0) < amount:
                    fits = False
                    break
                left[rp][rc] -= amount
            if not fits:
                break
        if fits:
            found.add(frozenset(rp for rp, res in left.items()
                                if any(res.get(rc, 0) > 0 for rc in wanted)))
    return sorted(found, key=sorted)


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

    Capacity plays no part, so a full host is judged like any other. The
    verdict is inconclusive only when placement holds no allocations for
    the server, when none of them serves the unsuffixed group, or when
    numbered groups asking for the same resource classes make the split of
    the allocations ambiguous and the candidates disagree.

    Requests: ``GET /allocations/{server}``, then the traits of each
    provider serving the unsuffixed group, the compute node first,
    stopping as soon as every trait is found: two in the common case, one
    more for each further provider the unsuffixed group is spread over.
    None of it depends on the size of the tree or of the cloud.
    """

    name = 'held_providers'
    rule = ("the providers holding the server's unsuffixed resources must "
            "have them")
    lacks = _('missing on the resources this server uses')

    def evaluate(self, ctx):
        held = self.held_allocations(ctx)
        if not held:
            return decision.Verdict(
                decision.INCONCLUSIVE,
                detail='placement holds no allocations for the server')
        splits = unsuffixed_holders(held, self.resource_query(ctx))
        splits = [s for s in splits if s]
        if not splits:
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=tuple(sorted(held)),
                detail=('no allocation of the server can be told to serve '
                        'the unsuffixed request group'))
        root = ctx.request.compute_node_uuid
        traits = {}
        verdicts = [self._judge(ctx, split, root, traits) for split in splits]
        consulted = tuple(traits)
        outcomes = {v.outcome for v in verdicts}
        if outcomes == {decision.ACCEPT}:
            return decision.Verdict(decision.ACCEPT, providers=consulted)
        if outcomes == {decision.REJECT}:
            missing = frozenset().union(*(v.missing for v in verdicts))
            return decision.Verdict(
                decision.REJECT, missing=missing, providers=consulted,
                detail='not on the providers serving the unsuffixed group')
        return decision.Verdict(
            decision.INCONCLUSIVE, providers=consulted,
            detail=('%d ways the allocations could split between the '
                    'request groups disagree' % len(splits)))

    def _judge(self, ctx, split, root, traits):
        missing = set(ctx.required)
        for rp in sorted(split, key=lambda u: (u != root, u)):
            if not missing:
                break
            if rp not in traits:
                traits[rp] = self.provider_traits(ctx, rp)
            missing -= traits[rp]
        return decision.Verdict(
            decision.REJECT if missing else decision.ACCEPT,
            missing=frozenset(missing))
