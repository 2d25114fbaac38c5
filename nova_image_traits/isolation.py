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
"""Aggregates isolated for a trait: placement's rule for forbidden ones.

With ``[scheduler] enable_isolated_aggregate_filtering``, nova's request
filter ``isolate_aggregates`` forbids a boot every aggregate whose
metadata requires (``trait:X=required``) a trait the flavor and the image
do not require. nova puts them on the *unsuffixed* request group
(``member_of=!in:...``), and placement then keeps a candidate only when
each provider serving a resource of that group, **and its root**, is
outside every forbidden aggregate (``get_trees_matching_all`` in
placement's ``objects/research_context.py``: "the rp itself *and its
root* should be outside the aggregate"; a sharing provider's root there is
the compute node it is anchored to). Providers serving only numbered
groups do not count.

A rebuild keeps its allocations, so the providers that count are:

* the compute node, the root of its tree (always);
* each provider the server holds that serves the unsuffixed group, as
  :func:`~nova_image_traits.strategies.held_providers.unsuffixed_holders`
  works them out from the boot query (a nested provider, a sharing
  provider of the disk). When the allocations could come from several
  splits, the rebuild passes when one of them is outside, as a boot could
  have been placed by that one.

Requests (placement's aggregates, the boot's view; microversion 1.1):
``GET /resource_providers/{root}/aggregates``, one request, which alone
refuses a compute node inside a forbidden aggregate. Outside, the
server's allocations tell which other providers count (``GET
/allocations/{server}``, read once per decision and reused by the
strategies that read it too), and each such provider costs one more
``GET /resource_providers/{uuid}/aggregates``: none for a compute node
that holds the whole unsuffixed group. It imports nothing from nova.
"""

import collections
import typing as ty

from nova_image_traits import placement
from nova_image_traits.strategies import base
from nova_image_traits.strategies import held_providers

#: The microversion of ``GET /resource_providers/{uuid}/aggregates``.
AGGREGATES_VERSION = '1.1'


class Breach(ty.NamedTuple):
    """Where a rebuild would break isolation.

    :ivar providers: ``{provider: forbidden aggregates it is in}`` (for
        the operator's log, never for a tenant)
    """
    providers: dict

    @property
    def aggregates(self):
        """Every forbidden aggregate found, sorted."""
        return sorted({a for aggs in self.providers.values() for a in aggs})


def aggregates_of(ctx, rp_uuid):
    """The aggregates of one provider, as placement reads them (one request).

    :returns: a frozenset of aggregate UUIDs
    """
    cache = ctx._cache.setdefault('aggregates', {})
    if rp_uuid not in cache:
        url = '/resource_providers/%s/aggregates' % placement.quote(rp_uuid)
        body = ctx.placement.get(url, version=AGGREGATES_VERSION)
        found = placement.require(body.get('aggregates'), list, url,
                                  'aggregates')
        cache[rp_uuid] = frozenset(str(a) for a in found)
    return cache[rp_uuid]


def counted_providers(held, query, root):
    """The sets of providers the rule counts, one per possible split.

    :param held: ``{rp_uuid: {rc: amount}}``, the server's allocations
        (empty when placement holds none)
    :param query: the boot's :class:`~nova_image_traits.flavor.ResourceQuery`
    :param root: the compute node's provider, the root of its tree
    :returns: a list of frozensets, each holding ``root``; the root alone
        when the allocations name no holder of the unsuffixed group
    """
    splits = held_providers.unsuffixed_holders(held, query) if held else []
    if not splits:
        wanted = set(query.unsuffixed.resources)
        splits = [frozenset(rp for rp, res in held.items()
                            if set(res) & wanted)]
    return [frozenset(s) | {root} for s in splits]


def in_tree_only(ctx, held, root):
    """``held`` less another node's providers while a move is unfinished.

    When the allocations can be one placement candidate (the node holds a
    part and no class is held twice) they are all this host's; otherwise
    only the compute node's tree counts (one ``in_tree`` request), as in
    :func:`nova_image_traits.engine._held_here`.
    """
    classes = collections.Counter(
        rc for res in held.values() for rc, n in res.items() if n)
    if root in held and not any(n > 1 for n in classes.values()):
        return held
    tree = set(base.Strategy.providers(ctx, [('in_tree', root)], '1.14'))
    return {rp: res for rp, res in held.items() if rp in tree}


def breach(ctx, forbidden):
    """Whether the server's providers break isolation, and where.

    :param ctx: a :class:`~nova_image_traits.strategies.base.Context`
    :param forbidden: the aggregates a boot of the new image may not use
    :returns: a :class:`Breach`, or None when the rule is met
    :raises: :class:`~nova_image_traits.exception.PlacementError`
    """
    forbidden = frozenset(forbidden)
    if not forbidden:
        return None
    root = ctx.request.compute_node_uuid
    inside = aggregates_of(ctx, root) & forbidden
    if inside:
        return Breach({root: sorted(inside)})
    held = base.Strategy.held_allocations(ctx) or {}
    if held:
        held = in_tree_only(ctx, held, root)
    first = None
    for providers in counted_providers(held, ctx.request.resource_query(),
                                       root):
        found = {}
        for rp in sorted(providers - {root}):
            bad = aggregates_of(ctx, rp) & forbidden
            if bad:
                found[rp] = sorted(bad)
                break
        if not found:
            return None
        first = first or Breach(found)
    return first
