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
from nova_image_traits.i18n import _
from nova_image_traits import placement
from nova_image_traits import requirements

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


def judged(unmet, providers=(), detail=''):
    """Accept when no requirement is ``unmet``, else reject naming them."""
    unmet = tuple(sorted(set(unmet)))
    return decision.Verdict(
        decision.REJECT if unmet else decision.ACCEPT,
        missing=frozenset(r.trait for r in unmet),
        providers=tuple(providers), detail=detail if unmet else '',
        unmet=unmet)


@dataclasses.dataclass(frozen=True)
class Context:
    """What a strategy is given.

    :ivar request: the :class:`~nova_image_traits.request.RebuildRequest`
    :ivar required: the names of the traits required, in any scope
    :ivar placement: the decision's
        :class:`~nova_image_traits.placement.PlacementSession`
    :ivar requirements: every
        :class:`~nova_image_traits.requirements.Requirement` to judge (never
        empty); by default the unsuffixed ``required`` traits
    """
    request: ty.Any
    required: frozenset
    placement: ty.Any
    requirements: tuple = ()
    _cache: dict = dataclasses.field(default_factory=dict, compare=False,
                                     repr=False)

    def __post_init__(self):
        if not self.requirements:
            object.__setattr__(self, 'requirements',
                               requirements.from_image_traits(self.required))

    def of(self, scope=None, forbidden=None):
        """The requirements of one scope, or of one kind, or both."""
        return tuple(r for r in self.requirements
                     if (scope is None or r.scope == scope) and
                     (forbidden is None or r.forbidden == forbidden))


class Strategy(metaclass=abc.ABCMeta):
    """A rule deciding whether the current host satisfies image traits.

    Subclasses set :attr:`name`, :attr:`rule` (the rule, in a few words,
    for operators), :attr:`lacks` (what a refusal says of the missing
    traits, for users: "missing on this server's compute node") and
    :attr:`judged` (what was judged: "this server's compute node"), and
    implement :meth:`evaluate`. They raise
    :class:`~nova_image_traits.exception.PlacementError` when placement
    cannot answer; they never write to placement. A trait both required
    and forbidden in one request group, and resources the server does not
    hold, are refused by the engine before any strategy runs.
    """

    name = None
    rule = None
    lacks = None
    judged = None

    def unmet_phrase(self, unmet):
        """What a refusal says of ``unmet`` requirements, for users."""
        where = self.judged or _("this server's host")
        if all(r.forbidden for r in unmet):
            return _('present on %s') % where
        if not any(r.forbidden for r in unmet):
            return _('missing on %s') % where
        return _('not met by %s') % where

    @abc.abstractmethod
    def evaluate(self, ctx):
        """Return a :class:`~nova_image_traits.decision.Verdict`."""

    @staticmethod
    def resource_query(ctx):
        """Return the boot query of this server, less the image's asks.

        See :meth:`~nova_image_traits.request.RebuildRequest.resource_query`.
        """
        return ctx.request.resource_query()

    @staticmethod
    def held_allocations(ctx):
        """Return what the server holds: ``{rp_uuid: {rc: amount}}``.

        One request, ``GET /allocations/{consumer}``, once per decision; a
        rebuild keeps these allocations, so they name the providers the
        rebuilt server uses.
        """
        if 'held' not in ctx._cache:
            ctx._cache['held'] = Strategy._read_allocations(ctx)
        return ctx._cache['held']

    @staticmethod
    def _read_allocations(ctx):
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
