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
"""Read placement once per compute node for a batch of decisions.

``audit`` asks about every server of a node in turn. Most strategies decide
once per (node, image, flavor), but ``allocation_traits`` reads the
server's own allocations, and every decision re-reads the same providers'
traits. :class:`CachingClient` wraps the engine's
:class:`~nova_image_traits.placement.PlacementClient` so that:

* a provider's traits are read once per audit;
* :meth:`CachingClient.index_node` reads, once per node, the allocations
  held on every provider of the node's tree and on the sharing providers of
  its aggregates, and answers ``GET /allocations/{server}`` for the servers
  found there from that index.

The audit's requests then grow with nodes and their providers, not with
servers. A server that holds nothing in the indexed providers is read from
placement as usual. Nothing is cached beyond one command.
"""

import re

from oslo_log import log as logging

from nova_image_traits import placement

LOG = logging.getLogger(__name__)

_TRAITS_URL = re.compile(r'/resource_providers/[^/?]+/traits')
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'


class _Cached:
    """A successful placement answer, kept for the rest of the command."""

    status_code = 200

    def __init__(self, body):
        self._body = body

    def json(self):
        return self._body


class CachingClient:
    """A placement client that reuses what an audit has already read.

    It stands in for :class:`~nova_image_traits.placement.PlacementClient`;
    the microversion is the client's.

    :param client: the client that really talks to placement
    :ivar sent: the requests really sent to placement
    """

    def __init__(self, client):
        self._client = client
        self.sent = 0
        self._answers = {}
        self._held = {}

    def max_version(self, session, ttl=None):
        return self._client.max_version(session, ttl)

    def forget_version(self):
        self._client.forget_version()

    def start(self, timeout, max_url_length, **kwargs):
        return placement.PlacementSession(self, timeout, max_url_length,
                                          **kwargs)

    def answered(self, url, version):
        return url in self._answers

    def request(self, url, version, deadline, limit,
                global_request_id=None):
        answer = self._answers.get(url)
        if answer is not None:
            return answer
        self.sent += 1
        resp = self._client.request(url, version, deadline, limit,
                                    global_request_id)
        if resp.status_code == 200 and _TRAITS_URL.fullmatch(url):
            try:
                self._answers[url] = _Cached(resp.json())
            except ValueError:
                pass
        return resp

    def index_node(self, session, root):
        """Index the allocations held in ``root``'s tree and shared pools.

        :param session: a session of this client, for the deadline and count
        :param root: the compute node's resource provider UUID
        :raises: PlacementError when placement cannot answer
        """
        providers = self._uuids(session.get(
            '/resource_providers', [('in_tree', root)], version='1.14'))
        tree = set(providers)
        aggregates = session.get(
            '/resource_providers/%s/aggregates' % placement.quote(root),
            version='1.1').get('aggregates') or []
        if aggregates:
            providers += [u for u in self._uuids(session.get(
                '/resource_providers',
                [('member_of', 'in:' + ','.join(sorted(aggregates))),
                 ('required', SHARING_TRAIT)], version='1.18'))
                if u not in tree]
        by_consumer = {}
        for uuid in providers:
            held = self._provider_allocations(session, uuid)
            for consumer, resources in held.items():
                if uuid in tree or consumer in by_consumer:
                    by_consumer.setdefault(consumer, {})[uuid] = resources
        for consumer, allocations in by_consumer.items():
            url = '/allocations/%s' % placement.quote(consumer)
            self._answers[url] = _Cached({'allocations': allocations})
        LOG.debug('Indexed the allocations of %(n)d consumers on the '
                  '%(p)d providers of node %(root)s',
                  {'n': len(by_consumer), 'p': len(providers), 'root': root})

    def _provider_allocations(self, session, uuid):
        if uuid not in self._held:
            url = '/resource_providers/%s/allocations' % placement.quote(
                uuid)
            self._held[uuid] = placement.require(session.get(
                url, version='1.0').get('allocations'), dict, url,
                'allocations')
        return self._held[uuid]

    @staticmethod
    def _uuids(body):
        found = placement.require(body.get('resource_providers'), list,
                                  '/resource_providers', 'resource_providers')
        return [str(rp['uuid']) for rp in found
                if isinstance(rp, dict) and rp.get('uuid')]
