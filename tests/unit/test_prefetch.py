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
"""Placement requests sent ahead answer the decision's requests once."""

import threading
import time

from keystoneauth1 import exceptions as ks_exc

from nova_image_traits import exception
from nova_image_traits.placement import known_traits
from nova_image_traits.placement import prefetch
from tests.unit import base


class _Response:
    status_code = 200

    def __init__(self, body):
        self.body = body

    def json(self):
        return self.body


class _Client:
    """Answers every GET with its URL; records who asked."""

    def __init__(self, fail=None, hold=None):
        self.asked = []
        self.fail = fail
        self.hold = hold
        # NOTE(founders): as a PlacementClient, with room for no answer.
        self.known_traits = known_traits.KnownTraits(size=0)

    def request(self, url, version, deadline, limit, global_request_id=None):
        if self.hold is not None:
            self.hold.wait()
        self.asked.append((url, version, threading.get_ident()))
        if self.fail:
            raise self.fail
        return _Response({'url': url})

    def max_version(self, session, ttl=None):
        return (1, 39)

    def forget_version(self):
        pass


class PrefetchingClientTest(base.TestCase):

    def test_sent_ahead_answers_once_then_asks_again(self):
        client = _Client()
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch('/allocations/a', '1.0', 60)
        session = ahead.start(60, 8000)
        self.assertEqual({'url': '/allocations/a'},
                         session.get('/allocations/a', version='1.0'))
        # Sent from a worker, before the decision asked.
        self.assertEqual(1, len(client.asked))
        self.assertNotEqual(threading.get_ident(), client.asked[0][2])
        # Asked again: a new request, from the caller's side.
        session.get('/allocations/a', version='1.0')
        self.assertEqual(2, len(client.asked))
        self.assertEqual(2, session.requests)

    def test_another_version_is_not_the_same_request(self):
        client = _Client()
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch('/traits', '1.6', 60)
        session = ahead.start(60, 8000)
        session.get('/traits', version='1.0')
        session.get('/traits', version='1.6')  # the one sent ahead
        self.assertEqual(['1.0', '1.6'],
                         sorted(v for _u, v, _t in client.asked))

    def test_failure_is_the_request_s_own(self):
        client = _Client(fail=ks_exc.ConnectFailure('refused'))
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch('/allocations/a', '1.0', 60)
        session = ahead.start(60, 8000)
        self.assertRaises(exception.PlacementUnreachable, session.get,
                          '/allocations/a', version='1.0')

    def test_decision_stops_waiting_at_its_deadline(self):
        hold = threading.Event()
        self.addCleanup(hold.set)
        ahead = prefetch.PrefetchingClient(_Client(hold=hold))
        ahead.prefetch('/allocations/a', '1.0', 60)
        self.assertRaises(
            exception.DecisionDeadlineExceeded, ahead.request,
            '/allocations/a', '1.0', time.monotonic() + 0.05, 0.05)

    def test_a_decision_that_began_earlier_ends_at_its_deadline(self):
        # The pre-check waited for the compute node first: the session
        # the engine opens with the whole decision_timeout ends when the
        # decision must, not a decision_timeout later.
        hold = threading.Event()
        self.addCleanup(hold.set)
        ahead = prefetch.PrefetchingClient(_Client(hold=hold))
        ahead.prefetch('/allocations/a', '1.0', 60)
        deadline = ahead.begin(0.05)
        session = ahead.start(60, 8000)
        self.assertRaises(exception.DecisionDeadlineExceeded, session.get,
                          '/allocations/a', version='1.0')
        self.assertGreaterEqual(time.monotonic(), deadline)
        # Asked ahead, never answered: counted as asked.
        self.assertEqual((1, 0), (session.requests, session.known))

    def test_an_answer_that_arrived_is_read_after_the_deadline(self):
        # The decision's time went on nova's database: what placement
        # already answered is still its answer.
        client = _Client()
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch('/allocations/a', '1.0', 60)
        for _i in range(1000):
            if ahead.answered('/allocations/a', '1.0'):
                break
            time.sleep(0.01)
        ahead.begin(0)
        session = ahead.start(60, 8000)
        self.assertEqual({'url': '/allocations/a'},
                         session.get('/allocations/a', version='1.0'))
        # Anything else is past the deadline.
        self.assertRaises(exception.DecisionDeadlineExceeded, session.get,
                          '/traits', version='1.6')


class _PlacementLike(_Client):
    """Answers allocations and traits as placement shapes them."""

    def __init__(self, generation, traits, **kwargs):
        super().__init__(**kwargs)
        self.generation = generation
        self.traits = traits
        self.known_traits = known_traits.KnownTraits()
        #: Set: the allocations wait for it.
        self.hold_allocations = None

    def request(self, url, version, deadline, limit, global_request_id=None):
        if url.startswith('/allocations/') and self.hold_allocations:
            self.hold_allocations.wait()
        super().request(url, version, deadline, limit, global_request_id)
        if self.traits is None:
            return _NotFound()
        if url.startswith('/allocations/'):
            return _Response({'allocations': {
                'rp': {'generation': self.generation,
                       'resources': {'VCPU': 1}}}})
        return _Response({'traits': list(self.traits),
                          'resource_provider_generation': self.generation})


class _NotFound:
    status_code = 404
    reason = 'Not Found'

    def json(self):
        return {'errors': [{'detail': 'No resource provider'}]}


class PrefetchTraitsTest(base.TestCase):
    """The node's traits are sent for only when its generation moved."""

    def _decide(self, client, allocations='/allocations/a'):
        ahead = prefetch.PrefetchingClient(client)
        if allocations:
            ahead.prefetch(allocations, '1.0', 60)
        ahead.prefetch_traits('rp', 60, allocations=allocations)
        session = ahead.start(60, 8000)
        if allocations:
            session.get(allocations, version='1.0')
        body = session.get('/resource_providers/rp/traits', version='1.6')
        return body['traits'], session

    def _urls(self, client):
        urls = [url for url, _v, _t in client.asked]
        del client.asked[:]
        return urls

    def test_asked_once_while_the_generation_holds(self):
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        traits, session = self._decide(client)
        self.assertEqual(['CUSTOM_GOLD'], traits)
        self.assertEqual(['/allocations/a', '/resource_providers/rp/traits'],
                         sorted(self._urls(client)))
        self.assertEqual((2, 0), (session.requests, session.known))
        traits, session = self._decide(client)
        self.assertEqual(['CUSTOM_GOLD'], traits)
        self.assertEqual(['/allocations/a'], self._urls(client))
        # Read, not sent: counted apart.
        self.assertEqual((1, 1), (session.requests, session.known))

    def test_asked_again_when_the_generation_moved(self):
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        self._decide(client)
        self._urls(client)
        client.generation, client.traits = 4, []
        traits, _session = self._decide(client)
        self.assertEqual([], traits)
        self.assertEqual(['/allocations/a', '/resource_providers/rp/traits'],
                         self._urls(client))
        # The new answer is the one kept.
        traits, _session = self._decide(client)
        self.assertEqual([], traits)
        self.assertEqual(['/allocations/a'], self._urls(client))

    def test_without_allocations_always_asked(self):
        # root_traits and tree_traits read no allocations: no generation.
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        for _i in range(2):
            self._decide(client, allocations=None)
            self.assertEqual(['/resource_providers/rp/traits'],
                             self._urls(client))

    def test_failed_allocations_ask_the_traits(self):
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        self._decide(client)
        self._urls(client)
        client.fail = ks_exc.ConnectFailure('refused')
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch('/allocations/a', '1.0', 60)
        ahead.prefetch_traits('rp', 60, allocations='/allocations/a')
        session = ahead.start(60, 8000)
        self.assertRaises(exception.PlacementUnreachable, session.get,
                          '/resource_providers/rp/traits', version='1.6')
        self.assertIn('/resource_providers/rp/traits', self._urls(client))
        # A request that failed was asked: counted, and not as kept.
        self.assertEqual((1, 0), (session.requests, session.known))

    def test_a_client_that_keeps_nothing_asks(self):
        client = _Client()
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch_traits('rp', 60, allocations=None)
        session = ahead.start(60, 8000)
        self.assertEqual(
            {'url': '/resource_providers/rp/traits'},
            session.get('/resource_providers/rp/traits', version='1.6'))

    def test_kept_but_no_allocations_sent_ahead_asks(self):
        # Every worker was busy for the allocations: no generation to
        # compare with.
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        self._decide(client)
        self._urls(client)
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch_traits('rp', 60, allocations='/allocations/a')
        session = ahead.start(60, 8000)
        session.get('/resource_providers/rp/traits', version='1.6')
        self.assertEqual(['/resource_providers/rp/traits'],
                         self._urls(client))
        self.assertEqual((1, 0), (session.requests, session.known))

    def test_kept_answer_expired_meanwhile_asks(self):
        now = [0.0]
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        client.known_traits = known_traits.KnownTraits(
            max_age=10, clock=lambda: now[0])
        self._decide(client)
        self._urls(client)
        # Kept when the traits were sent for; too old once the
        # allocations answered.
        client.hold_allocations = threading.Event()
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch('/allocations/a', '1.0', 60)
        ahead.prefetch_traits('rp', 60, allocations='/allocations/a')
        now[0] = 11.0
        client.hold_allocations.set()
        session = ahead.start(60, 8000)
        session.get('/resource_providers/rp/traits', version='1.6')
        self.assertEqual(['/allocations/a', '/resource_providers/rp/traits'],
                         self._urls(client))

    def test_allocations_too_late_ask_the_traits(self):
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        self._decide(client)
        self._urls(client)
        client.hold_allocations = threading.Event()
        self.addCleanup(client.hold_allocations.set)
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch('/allocations/a', '1.0', 60)
        ahead.prefetch_traits('rp', 0.05, allocations='/allocations/a')
        session = ahead.start(60, 8000)
        # Not answered from what was kept: the traits were sent for when
        # the wait for the allocations ran out (this double answers after
        # the deadline too; placement's client would not send it).
        self.assertEqual(
            ['CUSTOM_GOLD'],
            session.get('/resource_providers/rp/traits',
                        version='1.6')['traits'])
        self.assertEqual((1, 0), (session.requests, session.known))
        self.assertEqual(['/resource_providers/rp/traits'],
                         self._urls(client))

    def test_a_provider_placement_no_longer_finds_is_forgotten(self):
        client = _PlacementLike(3, ['CUSTOM_GOLD'])
        self._decide(client)
        self.assertTrue(client.known_traits.knows('rp'))
        client.traits = None
        ahead = prefetch.PrefetchingClient(client)
        ahead.prefetch_traits('rp', 60)
        session = ahead.start(60, 8000)
        self.assertRaises(exception.PlacementBadResponse, session.get,
                          '/resource_providers/rp/traits', version='1.6')
        self.assertFalse(client.known_traits.knows('rp'))
