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
"""The process-wide placement client, as the filter and the hook use it.

Every decision here goes through ``engine.decide(request, conf=conf)``
with no client given, so the engine picks (or builds) the cached client
itself, exactly as in nova. Placement is the real one, on loopback; faults
come from the middleware and TCP helpers of :mod:`test_faults`.
"""

import threading
import time
import uuid

import fixtures
import testtools.content
from testtools import matchers

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import placement
from nova_image_traits import request as nit_request
from tests.functional import test_faults
from tests.functional import test_strategies

TRAIT = test_strategies.TRAIT
ABSENT = test_faults.ABSENT


class _EngineTestBase(test_faults.FaultTestBase):
    """Decisions through the engine's own cached client."""

    def setUp(self):
        super().setUp()
        placement.reset_clients()
        self.addCleanup(placement.reset_clients)

    def decide_cached(self, conf, strategy, trait=TRAIT, flavor=None,
                      image_properties=None, global_request_id=None):
        conf.set_override('strategy', strategy, 'image_traits')
        req = nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=self.node,
            image_properties=(image_properties or
                              {'trait:%s' % trait: 'required'}),
            flavor=flavor or test_strategies.FLAVOR, host='test-host',
            global_request_id=global_request_id)
        return engine.decide(req, conf=conf)


class TestClientFollowsConfiguration(_EngineTestBase):

    def test_changed_endpoint_reaches_the_new_placement(self):
        # Two endpoints of the one placement this process may run.
        first = test_faults.TCPProxy(self.server.port)
        second = test_faults.TCPProxy(self.server.port)
        for proxy in (first, second):
            self.addCleanup(proxy.stop)
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(first.endpoint))
        result = self.decide_cached(conf, 'root_traits')
        self.assertEqual(decision.ACCEPT, result.outcome, result.detail)
        self.assertEqual(1, first.accepted)

        # The same ConfigOpts, another endpoint, the first one gone: a
        # new client reaches the new endpoint.
        first.refuse()
        for name, value in test_faults.admin_token_opts(
                second.endpoint).items():
            conf.set_override(name, value, 'placement')
        result = self.decide_cached(conf, 'root_traits')
        self.assertEqual(decision.ACCEPT, result.outcome, result.detail)
        self.assertEqual(1, second.accepted)

        # Back to the first settings: the first client, which now fails.
        for name, value in test_faults.admin_token_opts(
                first.endpoint).items():
            conf.set_override(name, value, 'placement')
        result = self.decide_cached(conf, 'root_traits')
        self.assertEqual('unreachable', result.cause, result.detail)
        self.assertIn(first.endpoint, result.detail)

    def test_changed_timeout_and_retries_are_followed(self):
        proxy = test_faults.TCPProxy(self.server.port)
        self.addCleanup(proxy.stop)
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(proxy.endpoint))
        self.assertEqual(decision.ACCEPT,
                         self.decide_cached(conf, 'root_traits').outcome)
        proxy.mode = 'close'
        before = proxy.accepted
        self.decide_cached(conf, 'root_traits')
        # Without keystoneauth's retries, the client sends a GET whose
        # connection broke once more (placement.client).
        self.assertEqual(2, proxy.accepted - before)
        conf.set_override('connect_retries', 2, 'placement')
        conf.set_override('connect_retry_delay', 0.01, 'placement')
        before = proxy.accepted
        result = self.decide_cached(conf, 'root_traits')
        self.assertEqual('unreachable', result.cause)
        self.assertEqual(3, proxy.accepted - before)


class TestPlacementOnlyWhenNeeded(_EngineTestBase):
    """Placement is down (a closed loopback port) from the start."""

    def setUp(self):
        super().setUp()
        self.down = 'http://127.0.0.1:%d' % test_faults.free_port()
        self.conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(self.down))

    def test_reject_decides_without_placement(self):
        flavor = nit_flavor.Flavor(
            vcpus=1, memory_mb=512, root_gb=1,
            extra_specs={'trait:%s' % TRAIT: 'required'})
        result = self.decide_cached(self.conf, 'reject', flavor=flavor)
        self.assertEqual(decision.ACCEPT, result.outcome, result.detail)
        self.assertEqual(0, result.requests)
        result = self.decide_cached(self.conf, 'reject', trait=ABSENT)
        self.assertEqual(decision.REJECT, result.outcome, result.detail)
        self.assertEqual('traits-missing', result.cause)
        self.assertEqual(0, result.requests)

    def test_refusals_before_placement_send_nothing(self):
        self.conf.set_override('max_image_traits', 2, 'image_traits')
        forbid = nit_flavor.Flavor(
            vcpus=1, memory_mb=512, root_gb=1,
            extra_specs={'trait:%s' % TRAIT: 'forbidden'})
        cases = [
            ({'trait:not a trait': 'required'}, None,
             'invalid-image-trait'),
            ({'trait:CUSTOM_A': 'required', 'trait:CUSTOM_B': 'required',
              'trait:CUSTOM_C': 'required'}, None, 'too-many-traits'),
            ({'trait:%s' % TRAIT: 'required'}, forbid,
             'forbidden-by-flavor'),
        ]
        for strategy in test_faults.PLACEMENT_STRATEGIES:
            for props, flavor, cause in cases:
                result = self.decide_cached(
                    self.conf, strategy, flavor=flavor,
                    image_properties=props)
                self.assertEqual(decision.REJECT, result.outcome,
                                 (strategy, cause, result.detail))
                self.assertEqual(cause, result.cause)
                self.assertEqual(0, result.requests)

    def test_every_invalid_property_is_named(self):
        props = {'trait:%s' % TRAIT: 'required'}
        props.update({'trait:custom_%02d' % i: 'required'
                      for i in range(40)})
        before = len(self.decision_lines())
        result = self.decide_cached(self.conf, 'in_tree_candidates',
                                    image_properties=props)
        self.assertEqual('invalid-image-trait', result.cause)
        self.assertEqual(0, result.requests)
        reason = result.user_reason()
        self.assertLessEqual(len('No valid host was found. ' + reason), 255)
        self.assertIn("'trait:custom_00', 'trait:custom_01'", reason)
        shown = reason.count("'trait:custom_")
        self.assertIn(' and %d more ' % (40 - shown), reason)
        line = self.assertLoggedOnce(result, before)
        for i in range(16):
            self.assertIn("'trait:custom_%02d'" % i, line)
        self.assertIn('and 24 more', line)

    def test_refused_connection_is_named(self):
        # The cause used to read "NotSupported: ... does not have any
        # supported versions" (openstacksdk's discovery); it is the
        # refused connection and the URL now, whatever the strategy.
        for strategy in test_faults.PLACEMENT_STRATEGIES:
            result = self.decide_cached(self.conf, strategy)
            self.assertPlacementError(result, 'unreachable', 'reject')
            # NOTE(series 2025.1, 2025.2, 2026.1): eventlet's green socket
            # names the errno (ECONNREFUSED) where the OS names the error.
            self.assertThat(result.detail, matchers.MatchesAny(
                matchers.Contains('Connection refused'),
                matchers.Contains('ECONNREFUSED')))
            self.assertIn(self.down + '/', result.detail)
            self.assertNotIn('NotSupported', result.detail)
            self.assertNotIn('supported versions', result.detail)

    def test_timeout_is_named(self):
        stub = test_faults.TCPProxy(mode='hang')
        self.addCleanup(stub.stop)
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(stub.endpoint),
            {'decision_timeout': 0.5})
        result = self.decide_cached(conf, 'in_tree_candidates')
        self.assertIn(result.cause, ('timeout', 'deadline'), result.detail)
        if result.cause == 'timeout':
            self.assertIn('timed out', result.detail)
            self.assertIn(stub.endpoint + '/', result.detail)

    def test_tls_error_is_named(self):
        # Plain HTTP placement, an https:// URL: the TLS handshake fails.
        url = 'https://127.0.0.1:%d' % self.server.port
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(url))
        result = self.decide_cached(conf, 'root_traits')
        self.assertPlacementError(result, 'unreachable', 'reject')
        self.assertIn('SSL', result.detail)
        self.assertIn(url + '/', result.detail)


class TestVersionFollowsPlacement(_EngineTestBase):
    """One real placement, capped and uncapped while the process runs."""

    def setUp(self):
        super().setUp()
        self.conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(self.endpoint))

    def version_documents(self):
        return [p for m, p in self.server.recorder if p in ('', '/')]

    def test_upgrade_is_picked_up_after_the_ttl(self):
        self.server.max_microversion = '1.30'
        self.conf.set_override('placement_version_ttl', 3600,
                               'image_traits')
        result = self.decide_cached(self.conf, 'in_tree_candidates')
        self.assertEqual('root_traits', result.fallback)
        self.server.max_microversion = None
        # Within the TTL the old version is trusted: still the fallback,
        # and no new version document.
        self.server.reset_recorder()
        result = self.decide_cached(self.conf, 'in_tree_candidates')
        self.assertEqual('root_traits', result.fallback)
        self.assertEqual([], self.version_documents())
        # Past the TTL, the upgrade is seen.
        self.conf.set_override('placement_version_ttl', 1, 'image_traits')
        time.sleep(1.1)
        self.server.reset_recorder()
        result = self.decide_cached(self.conf, 'in_tree_candidates')
        self.assertEqual(decision.ACCEPT, result.outcome, result.detail)
        self.assertIsNone(result.fallback)
        self.assertEqual(['/'], self.version_documents())

    def test_rollback_below_1_31_falls_back(self):
        self.server.reset_recorder()
        for on_error in test_faults.ON_ERROR:
            self.conf.set_override('on_placement_error', on_error,
                                   'image_traits')
            self.server.max_microversion = None
            self.conf.set_override('placement_version_ttl', 0,
                                   'image_traits')
            result = self.decide_cached(self.conf, 'in_tree_candidates')
            self.assertEqual(decision.ACCEPT, result.outcome)
            self.assertIsNone(result.fallback)
            # Rolled back: the cached version is refused with a real 406,
            # negotiated again, and the fallback decides, long TTL or not.
            self.conf.set_override('placement_version_ttl', 3600,
                                   'image_traits')
            self.server.max_microversion = '1.30'
            for trait, want in ((TRAIT, decision.ACCEPT),
                                (ABSENT, decision.REJECT)):
                result = self.decide_cached(self.conf, 'in_tree_candidates',
                                            trait=trait)
                self.assertEqual(want, result.outcome, result.detail)
                self.assertEqual('root_traits', result.fallback)
                self.assertNotEqual(decision.ERROR, result.outcome)
            self.assertOnlyGets()

    def test_rollback_to_1_33_asks_again_with_1_33(self):
        result = self.decide_cached(self.conf, 'in_tree_candidates')
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.server.max_microversion = '1.33'
        self.server.reset_recorder()
        result = self.decide_cached(self.conf, 'in_tree_candidates')
        self.assertEqual(decision.ACCEPT, result.outcome, result.detail)
        self.assertIsNone(result.fallback)
        # The server's allocations and the refused query, the version
        # document, then the strategy again, the allocations already read.
        allocations = '/allocations/%s' % self.instance
        paths = [p.split('?')[0] for _m, p in self.server.recorder]
        self.assertEqual([allocations, '/allocation_candidates', '/',
                          '/allocation_candidates'], paths)
        self.assertEqual(4, result.requests)


class _HeaderRecorder:
    """Records what placement took as each request's global request id."""

    def __init__(self, app):
        self.app = app
        self.seen = []

    def __call__(self, environ, start_response):
        result = self.app(environ, start_response)
        # oslo.middleware's RequestId, inside placement, accepts a valid
        # X-OpenStack-Request-ID as the global request id of its context.
        self.seen.append((environ.get('PATH_INFO'),
                          environ.get('HTTP_X_OPENSTACK_REQUEST_ID'),
                          environ.get('openstack.global_request_id')))
        return result


class TestGlobalRequestId(_EngineTestBase):

    def placement_middleware(self):
        def wrap(app):
            self.headers = _HeaderRecorder(app)
            return super(TestGlobalRequestId, self).placement_middleware()(
                self.headers)
        return wrap

    def test_global_request_id_reaches_placement(self):
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(self.endpoint))
        gid = 'req-%s' % uuid.uuid4()
        del self.headers.seen[:]
        result = self.decide_cached(conf, 'in_tree_candidates',
                                    trait=ABSENT, global_request_id=gid)
        self.assertEqual(decision.REJECT, result.outcome, result.detail)
        self.assertEqual(result.requests, len(self.headers.seen))
        for path, header, accepted in self.headers.seen:
            self.assertEqual(gid, header, path)
            self.assertEqual(gid, accepted, path)
        # Without one, none is sent.
        del self.headers.seen[:]
        self.decide_cached(conf, 'root_traits')
        self.assertEqual([None], [h for _p, h, _a in self.headers.seen])


class _HoldingPlacement:
    """A fault: answers a round's first ``answered`` GETs, holds the rest.

    The first ``answered`` requests of a round get placement's real answer
    once all of them have arrived. Every later one gets it when the round
    ends (:meth:`end_round`), and until then a byte of JSON whitespace
    every :attr:`TRICKLE` seconds, so that keystoneauth's read timeout
    never ends the request: it holds its connection, and its worker
    thread, until the round is over, however late the machine runs.
    """

    #: Seconds between two bytes of a held answer.
    TRICKLE = 0.1
    #: The longest a request is held if the test never ends its round.
    HOLD = 60

    def __init__(self, answered):
        self.answered = answered
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._in_flight = 0
        self.start_round()

    def start_round(self):
        with self._lock:
            #: GETs received this round
            self.received = 0
            self._all_in = threading.Event()
            self._released = threading.Event()

    def end_round(self):
        self._released.set()

    def wait_answered(self, timeout=HOLD):
        """Wait until every request received has had its whole answer."""
        with self._done:
            self._done.wait_for(lambda: not self._in_flight, timeout)

    def _answered(self):
        with self._done:
            self._in_flight -= 1
            self._done.notify_all()

    def __call__(self, environ, app):
        with self._lock:
            self.received += 1
            self._in_flight += 1
            first = self.received <= self.answered
            if self.received == self.answered:
                self._all_in.set()
            all_in, released = self._all_in, self._released
        if first:
            all_in.wait(self.HOLD)
            self._answered()
            return None
        status, headers, body = test_faults.real_body(environ, app)
        pad = int(self.HOLD / self.TRICKLE)

        def answer(environ, start_response):
            start_response(status, [
                (k, v) for k, v in headers if k.lower() != 'content-length'
            ] + [('Content-Length', str(pad + len(body)))])

            def chunks():
                try:
                    sent = 0
                    while sent < pad and not released.wait(self.TRICKLE):
                        sent += 1
                        yield b' '
                    yield b' ' * (pad - sent) + body
                finally:
                    self._answered()
            return chunks()
        return answer


class TestDeadlineUnderContention(_EngineTestBase):
    """More decisions at once than connections, and a slow placement."""

    #: 8 decisions at once, a pool of 2, 1.0 s each; placement answers the
    #: retries' test in SLOW / 2 seconds.
    THREADS = 8
    POOL = 2
    LIMIT = 1.0
    SLOW = 0.9
    #: The most a decision may outlast decision_timeout, besides the time
    #: the whole process was held still (assertTookLess).
    SLACK = 0.1

    def run_decisions(self, conf, strategy='root_traits', limit=LIMIT):
        results = []
        errors = []

        def run():
            started = time.monotonic()
            try:
                result = self.decide_cached(conf, strategy)
            except BaseException as e:
                errors.append(e)
                return
            results.append((time.monotonic() - started, result))
        threads = [threading.Thread(target=run, daemon=True)
                   for _i in range(self.THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(limit + 10)
        self.assertEqual([], errors)
        self.assertEqual(self.THREADS, len(results))
        return results

    def check(self, results, limit=LIMIT):
        worst = max(elapsed for elapsed, _r in results)
        self.addDetailUniqueName(
            'worst-overshoot',
            testtools.content.text_content('%.3f s' % (worst - limit)))
        self.assertTookLess(worst, limit + self.SLACK,
                            [(round(e, 3), r.cause) for e, r in results])
        for elapsed, result in results:
            self.assertTookLess(result.elapsed, limit + self.SLACK)
            if result.outcome == decision.ERROR:
                self.assertIn(result.cause, ('timeout', 'deadline'),
                              result.detail)
        return worst

    def test_pool_wait_slow_placement_and_first_build(self):
        # Placement answers the first two requests of a round once both
        # are in, and holds every later one until the round is over. So,
        # whatever the machine's pauses, the two decisions holding the two
        # connections get their answer, well inside the deadline; the next
        # two get a connection and wait for an answer that never comes
        # before their deadline; the other four never get a connection and
        # send nothing. Only the time bounds depend on the clock, and they
        # allow for stalls (assertTookLess).
        self.useFixture(fixtures.MonkeyPatch(
            'nova_image_traits.placement.client.POOL_SIZE', self.POOL))
        # Long enough for the two answered decisions to survive a pause of
        # the whole process of more than a second.
        limit = 2 * self.LIMIT
        gate = _HoldingPlacement(self.POOL)
        self.addCleanup(gate.end_round)
        self.set_fault(test_faults.on_paths(gate, root=True))
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(self.endpoint),
            {'decision_timeout': limit})
        # The first round also builds the client, inside the deadline.
        for _round in range(2):
            gate.start_round()
            results = self.run_decisions(conf, limit=limit)
            gate.end_round()
            self.check(results, limit)
            waited = sorted(r.detail for _e, r in results
                            if r.outcome != decision.ACCEPT)
            # Two connections: the two decisions holding them get their
            # answer...
            self.assertEqual(self.POOL, self.THREADS - len(waited), waited)
            # ...the two that took them next wait for an answer until
            # their deadline, and the others for a connection, sending
            # nothing.
            no_connection = [d for d in waited if
                             'No connection to placement became free' in d]
            self.assertEqual(self.THREADS - 2 * self.POOL,
                             len(no_connection), waited)
            self.assertEqual(2 * self.POOL, gate.received)
            # The held requests end, and free their connections.
            gate.wait_answered()

    def test_retries_and_version_document_under_contention(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_image_traits.placement.client.POOL_SIZE', self.POOL))

        def slow(environ, app):
            time.sleep(self.SLOW / 2)
            return test_faults.json_error(503, 'Unavailable', 'later')
        self.set_fault(test_faults.on_paths(slow))
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(
                self.endpoint, status_code_retries=5,
                status_code_retry_delay=0.2),
            {'decision_timeout': self.LIMIT})
        results = self.run_decisions(conf, strategy='in_tree_candidates')
        self.check(results)

    def test_token_fetch_is_inside_the_deadline(self):
        # Keystone hangs; [placement] timeout would let keystoneauth wait
        # 5 s for the token, the decision may wait 0.5 s.
        keystone = test_faults.TCPProxy(mode='hang')
        self.addCleanup(keystone.stop)
        limit = 0.5
        conf = test_faults.write_conf(self, {
            'auth_type': 'password', 'auth_url': keystone.endpoint + '/v3',
            'username': 'nova', 'password': 'secret',
            'project_name': 'service', 'user_domain_name': 'Default',
            'project_domain_name': 'Default', 'timeout': 5},
            {'decision_timeout': limit})
        for _i in range(3):
            started = time.monotonic()
            result = self.decide_cached(conf, 'root_traits')
            elapsed = time.monotonic() - started
            self.assertPlacementError(result, 'deadline', 'reject')
            self.assertTookLess(elapsed, limit + self.SLACK)
            self.assertGreaterEqual(elapsed, limit)
        self.assertNotIn('secret', self.decision_log.output)
