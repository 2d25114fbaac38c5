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

import threading

from oslo_log import log as logging

from nova_image_traits import decision
from nova_image_traits import exception
from nova_image_traits.i18n import _
from nova_image_traits import placement
from nova_image_traits import requirements
from nova_image_traits.strategies import base

LOG = logging.getLogger(__name__)

#: in_tree on GET /allocation_candidates.
MIN_VERSION = '1.31'
#: The highest version this strategy asks for: mappings in allocation
#: requests (1.34) tell which providers served which group.
PREFERRED_VERSION = '1.36'

_URL = '/allocation_candidates'
#: The most candidates read; a held candidate beyond it is not seen.
CANDIDATE_LIMIT = 1000

_warned = threading.Event()


class InTreeCandidatesStrategy(base.Strategy):
    """Ask placement whether a boot could land on the providers held now.

    Sends ``GET /allocation_candidates`` with the boot query nova sends
    (its own ``ResourceRequest`` inside nova), every group restricted to
    the compute node's tree with ``in_tree``, and every requirement of the
    new image where nova puts it: the unsuffixed group, or
    ``root_required``. A candidate counts only when it lands
    on the providers the server holds (each of its allocations is one the
    server has), because a rebuild keeps those allocations; a candidate on
    another NUMA node or pGPU of the same host does not count. The rebuild
    is accepted when such a candidate exists.

    Placement cannot discount the server's own usage, so when the providers
    the server holds have no room for a second copy of it (a full host, a
    full pGPU) no candidate counts, with or without the traits. A second
    query without the image traits tells the two apart: a held candidate
    there means the traits are missing; none means placement cannot tell,
    and the verdict is *inconclusive*, so that ``[image_traits]
    fallback_strategy`` decides. Placement leaves sharing providers out of
    an ``in_tree`` unsuffixed group, so a host whose disk is shared is
    inconclusive too, and so is placement older than microversion 1.31
    (one warning per process), or older than what the query needs
    (``root_required`` 1.35, ``same_subtree`` 1.36:
    :func:`~nova_image_traits.placement.query.candidate_version`).

    Requests: ``GET /allocations/{server}`` and one or two allocation
    candidates queries. Placement's cost for those grows with the cloud,
    not just the tree (it sums usage over every provider with the
    requested classes before applying ``in_tree``).
    """

    name = 'in_tree_candidates'
    rule = ('a new boot of this flavor and image on the providers the '
            'server holds must be possible')
    lacks = _('missing on the resources this server uses')
    judged = _('the resources this server uses')

    def evaluate(self, ctx):
        session = ctx.placement
        if not session.supports(MIN_VERSION):
            if not _warned.is_set():
                _warned.set()
                LOG.warning(
                    'Placement supports microversions up to %(have)s, but '
                    'the in_tree_candidates strategy needs %(need)s; '
                    'decisions fall back to [image_traits] '
                    'fallback_strategy until placement is upgraded.',
                    {'have': placement.format_version(
                        session.max_version()), 'need': MIN_VERSION})
            return decision.Verdict(
                decision.INCONCLUSIVE,
                detail='placement is older than microversion %s' % (
                    MIN_VERSION))
        version = placement.format_version(min(
            session.max_version(),
            placement.parse_version(PREFERRED_VERSION)))
        root = ctx.request.compute_node_uuid
        query = self.resource_query(ctx)
        if not query.unsuffixed.resources:
            # NOTE(founders): image traits belong to the unsuffixed group;
            # placement ignores a group without resources, so asking would
            # accept traits it never checked.
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=(root,),
                detail=('the unsuffixed request group, which carries the '
                        'image traits, asks for no resources'))
        with_traits = placement.candidate_params(
            query, root, limit=CANDIDATE_LIMIT,
            requirements=ctx.requirements)
        needed = placement.candidate_version(with_traits)
        if not session.supports(needed):
            # NOTE(founders): a placement rolled back below what this query
            # needs would answer 400; say why and let the fallback decide.
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=(root,),
                detail='placement is older than microversion %s, which '
                       'this query needs' % needed)
        # NOTE(founders): refuse a query placement would not take before asking
        # anything (the image traits make it long).
        session.build_url(_URL, with_traits)
        held = self.held_allocations(ctx)
        if not held:
            return base.NO_ALLOCATIONS

        try:
            match, many, summaries = self._held_candidate(
                ctx, with_traits, held, version)
        except exception.PlacementUnknownTraits as e:
            unknown = e.traits & ctx.required
            if not unknown:
                raise
            if unknown != ctx.required:
                # NOTE(founders): placement names only the first unknown trait.
                unknown = self.unknown_traits(ctx, ctx.required) or unknown
            return decision.Verdict(
                decision.REJECT, missing=unknown, providers=(root,),
                detail='placement does not know %s' % ', '.join(
                    sorted(unknown)))
        if match is not None:
            return decision.Verdict(
                decision.ACCEPT, providers=tuple(sorted(match['allocations'])))
        if many:
            # NOTE(founders): a held candidate may be past the limit (or past
            # placement's own max_allocation_candidates): a second query
            # finding one would wrongly say the traits are missing.
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=tuple(sorted(held)),
                detail=('at least %d candidates on this host with the image '
                        'traits and none on the providers the server holds'
                        % CANDIDATE_LIMIT))

        without_traits = placement.candidate_params(query, root,
                                                    limit=CANDIDATE_LIMIT)
        match, many, summaries = self._held_candidate(
            ctx, without_traits, held, version)
        if match is None:
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=tuple(sorted(held)),
                detail=('at least %d candidates on this host and none on the '
                        'providers the server holds' % CANDIDATE_LIMIT
                        if many else
                        'no allocation candidate on the providers the '
                        'server holds even without the image traits: they '
                        'have no room for another boot of the flavor, or '
                        'its disk comes from a sharing provider, which '
                        'placement leaves out of in_tree queries; placement '
                        'cannot tell whether the traits are there'))
        unmet = requirements.unmet(
            ctx.of(scope=requirements.UNSUFFIXED),
            self._unsuffixed_traits(summaries, match))
        unmet += requirements.unmet(
            ctx.of(scope=requirements.ROOT),
            self._unsuffixed_traits(summaries, {'mappings': {'': [root]}}))
        return base.judged(
            unmet or ctx.requirements,
            providers=tuple(sorted(match['allocations'])),
            detail=('no allocation candidate on the providers the server '
                    'holds with the image traits'))

    def _held_candidate(self, ctx, params, held, version):
        """Return ``(held candidate or None, many, provider summaries)``.

        ``many`` says whether the query found :data:`CANDIDATE_LIMIT`
        candidates. A candidate is held when each of its allocations is one
        the server has: the same amount of the same class on the same
        provider.
        """
        candidates, summaries = self.allocation_candidates(ctx, params,
                                                           version)
        many = len(candidates) >= CANDIDATE_LIMIT
        for areq in candidates:
            placement.require(areq, dict, _URL, 'an allocation request')
            allocs = placement.require(areq.get('allocations'), dict, _URL,
                                       'allocations')
            if all(rp in held and all(
                    held[rp].get(rc) == n for rc, n in
                    (a.get('resources') or {}).items())
                    for rp, a in allocs.items()):
                return areq, many, summaries
        return None, many, summaries

    @staticmethod
    def _unsuffixed_traits(summaries, areq):
        """Return the traits of the candidate's unsuffixed group providers.

        Those are the providers the candidate maps to the unsuffixed group,
        or every allocated provider before microversion 1.34.
        """
        mappings = areq.get('mappings')
        if isinstance(mappings, dict) and '' in mappings:
            uuids = mappings['']
        else:
            uuids = list(areq.get('allocations') or {})
        traits = set()
        for uuid in uuids:
            summary = placement.require(summaries.get(uuid) or {}, dict, _URL,
                                        'a provider summary')
            traits.update(placement.require(summary.get('traits') or [],
                                            list, _URL, 'traits'))
        return traits
