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
