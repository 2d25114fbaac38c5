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

import abc
import dataclasses
import typing as ty

from nova_image_traits import decision
from nova_image_traits import exception
from nova_image_traits import placement

#: The verdict of a strategy that judges the server's allocations, when
#: placement holds none (a server booted before placement, or data lost).
NO_ALLOCATIONS = decision.Verdict(
    decision.INCONCLUSIVE,
    detail='placement holds no allocations for the server')


def verdict(missing, providers=()):
    """Accept when no trait is ``missing``, else reject naming them."""
    return decision.Verdict(
        decision.REJECT if missing else decision.ACCEPT,
        missing=frozenset(missing), providers=tuple(providers))


@dataclasses.dataclass(frozen=True)
class Context:
    """What a strategy is given.

    :ivar request: the :class:`~nova_image_traits.request.RebuildRequest`
    :ivar required: the valid traits the new image requires (never empty)
    :ivar placement: the decision's
        :class:`~nova_image_traits.placement.PlacementSession`
    """
    request: ty.Any
    required: frozenset
    placement: ty.Any


class Strategy(metaclass=abc.ABCMeta):
    """A rule deciding whether the current host satisfies image traits.

    Subclasses set :attr:`name`, :attr:`rule` (the rule, in a few words,
    for operators) and :attr:`lacks` (what a refusal says of the missing
    traits, for users: "missing on this server's compute node") and
    implement :meth:`evaluate`. They raise
    :class:`~nova_image_traits.exception.PlacementError` when placement
    cannot answer; they never write to placement. Forbidden flavor traits
    are checked by the engine before any strategy runs.
    """

    name = None
    rule = None
    lacks = None

    @abc.abstractmethod
    def evaluate(self, ctx):
        """Return a :class:`~nova_image_traits.decision.Verdict`."""

    @staticmethod
    def resource_query(ctx):
        """Return the boot query of this server, less the image traits.

        It is nova's own when the caller built it with nova, else the
        flavor's (:class:`~nova_image_traits.flavor.ResourceQuery`).
        """
        request = ctx.request
        if request.resources is not None:
            return request.resources
        return request.flavor.resource_query(request.is_volume_backed)

    @staticmethod
    def held_allocations(ctx):
        """Return what the server holds: ``{rp_uuid: {rc: amount}}``.

        One request, ``GET /allocations/{consumer}``; a rebuild keeps these
        allocations, so they name the providers the rebuilt server uses.
        """
        url = '/allocations/%s' % placement.quote(ctx.request.instance_uuid)
        body = ctx.placement.get(url, version='1.0')
        allocations = placement.require(
            body.get('allocations'), dict, url, 'allocations')
        held = {}
        for rp_uuid, alloc in allocations.items():
            alloc = placement.require(alloc, dict, url, 'an allocation')
            resources = placement.require(
                alloc.get('resources'), dict, url, 'resources')
            held[str(rp_uuid)] = {
                str(rc): placement.require(n, int, url, 'an amount')
                for rc, n in resources.items()}
        return held

    @staticmethod
    def unknown_traits(ctx, names):
        """Return which of ``names`` placement does not know (one request).

        Placement's 400 "No such trait(s)" names only the first unknown
        trait; ``GET /traits?name=in:...`` lists the known ones.
        """
        url = '/traits'
        body = ctx.placement.get(
            url, [('name', 'in:' + ','.join(sorted(names)))], version='1.6')
        known = placement.require(body.get('traits'), list, url, 'traits')
        return frozenset(names) - frozenset(str(t) for t in known)

    @staticmethod
    def providers(ctx, params, version):
        """Return the UUIDs ``GET /resource_providers?<params>`` lists."""
        url = '/resource_providers'
        body = ctx.placement.get(url, params, version=version)
        found = placement.require(body.get('resource_providers'), list, url,
                                  'resource_providers')
        return [str(rp['uuid']) for rp in found
                if isinstance(rp, dict) and rp.get('uuid')]

    @staticmethod
    def allocation_candidates(ctx, params, version):
        """Return the candidates and provider summaries of one query."""
        url = '/allocation_candidates'
        body = ctx.placement.get(url, params, version=version)
        return (placement.require(body.get('allocation_requests'), list, url,
                                  'allocation_requests'),
                placement.require(body.get('provider_summaries'), dict, url,
                                  'provider_summaries'))

    @staticmethod
    def provider_traits(ctx, rp_uuid):
        """Return the traits of one provider (one request)."""
        url = '/resource_providers/%s/traits' % placement.quote(rp_uuid)
        try:
            body = ctx.placement.get(url, version='1.6')
        except exception.PlacementBadResponse as e:
            if e.kwargs.get('status') == 404:
                raise exception.PlacementProviderNotFound(**e.kwargs) from e
            raise
        traits = placement.require(body.get('traits'), list, url, 'traits')
        return frozenset(str(t) for t in traits)
