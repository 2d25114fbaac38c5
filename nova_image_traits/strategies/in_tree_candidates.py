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

import dataclasses
import threading

from oslo_log import log as logging

from nova_image_traits import decision
from nova_image_traits import exception
from nova_image_traits import placement
from nova_image_traits.strategies import base

LOG = logging.getLogger(__name__)

#: in_tree on GET /allocation_candidates.
MIN_VERSION = '1.31'
#: The highest version this strategy asks for: mappings in allocation
#: requests (1.34) tell which providers served which group.
PREFERRED_VERSION = '1.36'

_warned = threading.Event()


class InTreeCandidatesStrategy(base.Strategy):
    """Ask placement the question it answers at boot, for this host only.

    Sends ``GET /allocation_candidates?in_tree=<root>&limit=1`` with the
    flavor's resources as nova requests them at boot (the unsuffixed group
    and any granular groups, each restricted to the tree), the flavor's
    required and forbidden traits, and the new image's required traits in
    the unsuffixed group. The rebuild is accepted when a candidate exists:
    the traits are judged exactly as for a new boot on this host, so a trait
    that only a nested provider outside the unsuffixed group has does not
    count.

    Placement cannot discount the server's own usage, so a host with no free
    capacity returns no candidate whether or not the traits are there. When
    the first query finds nothing, a second one without the image traits
    tells the two apart: a candidate there means the traits are missing; none
    means placement cannot tell, and the verdict is *inconclusive* so that
    ``[image_traits] fallback_strategy`` decides. Placement older than
    microversion 1.31 is inconclusive too, with one warning per process.
    """

    name = 'in_tree_candidates'
    rule = ('a new boot of this flavor and image on this host must be '
            'possible')

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
        groups = self.request_groups(ctx)
        policy = ctx.request.flavor.group_policy
        if not any(g.resources for g in groups if not g.suffix):
            # NOTE: image traits belong to the unsuffixed group; placement
            # ignores a group without resources, so asking would accept
            # traits it never checked.
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=(root,),
                detail=('the unsuffixed request group, which carries the '
                        'image traits, asks for no resources'))

        try:
            body = self._candidates(session, groups, root, ctx.required,
                                    policy, version)
        except exception.PlacementUnknownTraits as e:
            unknown = e.traits & ctx.required
            if not unknown:
                raise
            return decision.Verdict(
                decision.REJECT, missing=unknown, providers=(root,),
                detail='placement does not know %s' % ', '.join(
                    sorted(unknown)))
        if body['allocation_requests']:
            return decision.Verdict(
                decision.ACCEPT, providers=self._providers(body))

        body = self._candidates(session, groups, root, frozenset(), policy,
                                version)
        if not body['allocation_requests']:
            return decision.Verdict(
                decision.INCONCLUSIVE, providers=(root,),
                detail=('no allocation candidate on this host even without '
                        'the image traits: the host has no free capacity '
                        'for the flavor, or some of its resources come '
                        'from a sharing provider, which placement leaves '
                        'out of in_tree queries; placement cannot tell '
                        'whether the traits are there'))
        missing = ctx.required - self._unsuffixed_traits(body)
        return decision.Verdict(
            decision.REJECT, missing=frozenset(missing or ctx.required),
            providers=self._providers(body),
            detail=('no allocation candidate on this host with the image '
                    'traits'))

    def _candidates(self, session, groups, root, image_traits, policy,
                    version):
        url = '/allocation_candidates'
        # NOTE: nova puts the image's traits in the unsuffixed group.
        groups = [dataclasses.replace(g, required=g.required | image_traits)
                  if not g.suffix else g for g in groups]
        params = placement.candidate_params(groups, policy, root, limit=1)
        body = session.get(url, params, version=version)
        placement.require(body.get('allocation_requests'), list, url,
                          'allocation_requests')
        placement.require(body.get('provider_summaries'), dict, url,
                          'provider_summaries')
        for areq in body['allocation_requests'][:1]:
            placement.require(areq, dict, url, 'an allocation request')
            placement.require(areq.get('allocations'), dict, url,
                              'allocations')
        return body

    @staticmethod
    def _providers(body):
        seen = []
        for areq in body['allocation_requests'][:1]:
            allocs = areq.get('allocations') or {}
            for uuid in allocs:
                if uuid not in seen:
                    seen.append(str(uuid))
        return tuple(seen)

    @staticmethod
    def _unsuffixed_traits(body):
        """Return the traits of the unsuffixed group's providers.

        Those are the providers the first candidate maps to the unsuffixed
        group, or every allocated provider before microversion 1.34.
        """
        areq = body['allocation_requests'][0]
        mappings = areq.get('mappings')
        if isinstance(mappings, dict) and '' in mappings:
            uuids = mappings['']
        else:
            uuids = list(areq.get('allocations') or {})
        traits = set()
        url = '/allocation_candidates'
        for uuid in uuids:
            summary = placement.require(
                body['provider_summaries'].get(uuid) or {}, dict, url,
                'a provider summary')
            traits.update(placement.require(summary.get('traits') or [],
                                            list, url, 'traits'))
        return traits
