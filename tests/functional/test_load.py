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
"""Load: concurrent decisions, connections, and memory over many decisions.

Conductor and scheduler workers decide from many threads at once through
one process-wide client. These tests run hundreds of concurrent decisions
against one real placement and count the TCP connections the client opens.

The test placement (``PlacementServer``) speaks HTTP/1.0 and closes every
connection after one response, so nothing could be pooled there. The
connection tests therefore serve the same real placement application
through :class:`KeepAliveServer`, an HTTP/1.1 keep-alive server that counts
the connections it accepts and how many are open at once.

The memory test that always runs (:class:`TestMemory`, in ``tox -e
functional``) makes 10,000 decisions of the ``reject`` strategy (the
engine, parsing, logging; no placement) and 600 of ``held_providers``, the
default, against placement. The long run (:class:`TestMemoryLong`) is
skipped unless ``NIT_LOAD=1`` (``tox -e load``; ``.ci/run`` does not run
it). It makes sequential decisions against placement: 10,000 of
``held_providers`` and 10,000 of ``root_traits``, 2,000 of each of
``tree_traits``, ``in_tree_candidates`` and ``allocation_traits``, and
2,000 failing ones (``root_traits``, an unknown provider). Each bounds the
growth of traced client-side memory after its warm-up decisions.
"""

import collections
from concurrent import futures
import gc
import logging
import os
import socket
import socketserver
import threading
import time
import tracemalloc
import unittest
import uuid
from wsgiref import simple_server

import fixtures
import psutil

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request
from tests.functional import test_faults
from tests.functional import test_strategies

TRAIT = test_strategies.TRAIT
ABSENT = test_faults.ABSENT
STRATEGIES = test_strategies.STRATEGIES
A = decision.ACCEPT
R = decision.REJECT
#: (strategy, trait) -> outcome, for a server allocated on a host whose
#: root has TRAIT and nobody has ABSENT; the current image is known and
#: required nothing.
EXPECTED = {}
for _s in STRATEGIES:
    EXPECTED[_s, TRAIT] = R if _s == 'reject' else A
    EXPECTED[_s, ABSENT] = R
WORKERS = 50
TASKS = 250
#: Bytes of traced memory the process may keep growing by between the
#: 1,000th and the last decision.
MAX_GROWTH = 2 * 1024 * 1024
#: ... and per decision, on average.
MAX_PER_DECISION = 256
#: Fewer than one decision in MAX_LATE may end past its 2 s deadline.
MAX_LATE = 10
LOG = logging.getLogger(__name__)


class _ServerHandler11(simple_server.ServerHandler):
    """wsgiref's handler answering HTTP/1.1; unframed answers close."""

    http_version = '1.1'

    def cleanup_headers(self):
        super().cleanup_headers()
        if 'Content-Length' not in self.headers:
            self.headers['Connection'] = 'close'
        if self.headers.get('Connection', '').lower() == 'close':
            self.request_handler.close_connection = True


class _KeepAliveHandler(simple_server.WSGIRequestHandler):
    """HTTP/1.1 with keep-alive: many requests per connection."""

    protocol_version = 'HTTP/1.1'
    timeout = 30

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.opened(self.client_address)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.closed()

    def handle(self):
        self.close_connection = True
        self.served = 0
        self._one()
        while not self.close_connection:
            self._one()

    def _one(self):
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except OSError:
            self.close_connection = True
            return
        if not self.raw_requestline or len(self.raw_requestline) > 65536:
            self.close_connection = True
            return
        if self.served and self.server.take_close_reused():
            # As a server closing a kept-alive connection at its
            # keep-alive timeout while this request came in: unanswered.
            self.close_connection = True
            return
        self.served += 1
        if not self.parse_request():
            return
        handler = _ServerHandler11(
            self.rfile, self.wfile, self.get_stderr(), self.get_environ(),
            multithread=True)
        handler.request_handler = self
        handler.run(self.server.get_app())

    def log_message(self, format, *args):
        pass


class KeepAliveServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    """A keep-alive WSGI server on loopback that counts connections.

    :ivar accepted: connections accepted
    :ivar peak: most connections open at once
    :ivar requests: requests served
    :ivar close_reused: how many of the next requests that come on a
        connection that served one already are closed unanswered
    """

    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, app):
        self.accepted = 0
        self.active = 0
        self.peak = 0
        self.requests = 0
        self.close_reused = 0
        self.client_ports = set()
        self._lock = threading.Lock()
        super().__init__(('127.0.0.1', 0), _KeepAliveHandler)
        self.set_app(self._counting(app))
        self.port = self.server_address[1]
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={'poll_interval': 0.05},
            daemon=True)
        self._thread.start()

    def _counting(self, app):
        def counted(environ, start_response):
            with self._lock:
                self.requests += 1
            return app(environ, start_response)
        return counted

    def opened(self, address):
        with self._lock:
            self.accepted += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.client_ports.add(address[1])

    def closed(self):
        with self._lock:
            self.active -= 1

    def take_close_reused(self):
        with self._lock:
            if self.close_reused > 0:
                self.close_reused -= 1
                return True
            return False

    def handle_error(self, request, client_address):
        LOG.debug('keep-alive server: error from %s', client_address)

    def stop(self):
        self.shutdown()
        self.server_close()
        self._thread.join()


def established_to(port):
    """Our process's ESTABLISHED TCP connections to 127.0.0.1:port."""
    return [c for c in psutil.Process().net_connections(kind='tcp')
            if c.raddr and c.raddr.port == port and
            c.status == psutil.CONN_ESTABLISHED]


def pool_maxsize(client):
    """The connection pool size of the client's requests session."""
    requests_session = client._adapter.session.session
    return requests_session.get_adapter('http://')._pool_maxsize


class LoadTestBase(test_strategies.StrategyTestBase):

    def placement_middleware(self):
        def wrap(app):
            self.placement_app = app
            return app
        return wrap

    def setUp(self):
        super().setUp()
        self.builder.ensure_traits([ABSENT])
        self.node = self.build_host('root')
        self.keepalive = KeepAliveServer(self.placement_app)
        self.addCleanup(self.keepalive.stop)
        self.conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(self.keepalive.endpoint),
            {'decision_timeout': 60})
        self.client = test_faults.new_client(self.conf)
        # Building the client may have connected (version discovery).
        self.keepalive.accepted = self.keepalive.peak = 0
        self.keepalive.requests = 0
        self.keepalive.client_ports.clear()

    def rebuild(self, trait):
        return nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=self.node,
            image_properties={'trait:%s' % trait: 'required'},
            flavor=test_strategies.FLAVOR, original_image_properties={},
            host='test-host')

    def conf_for(self, strategy, decision_timeout=60):
        """A configuration per strategy, sharing nothing but [placement]."""
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(self.keepalive.endpoint),
            {'decision_timeout': decision_timeout, 'strategy': strategy})
        return conf


class TestKeptAliveConnectionClosed(LoadTestBase):
    """Placement's server closes a kept-alive connection as it is reused."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.INFO, format='%(name)s %(message)s'))

    def decide_twice(self, conf, client):
        """A decision, then another whose first request is closed."""
        first = engine.decide(self.rebuild(TRAIT), conf=conf, client=client)
        self.assertEqual(decision.ACCEPT, first.outcome, first.detail)
        opened, served = self.keepalive.accepted, self.keepalive.requests
        self.keepalive.close_reused = 1
        second = engine.decide(self.rebuild(TRAIT), conf=conf, client=client)
        self.assertEqual(decision.ACCEPT, second.outcome, second.detail)
        self.assertEqual(0, self.keepalive.close_reused)  # it was reused
        # The closed request went again on one new connection.
        self.assertEqual(opened + 1, self.keepalive.accepted)
        self.assertEqual(served + second.requests, self.keepalive.requests)

    def test_the_client_sends_it_again_on_a_new_connection(self):
        self.decide_twice(self.conf_for('tree_traits'), self.client)
        self.assertEqual(1, self.log.output.count('broke before its answer'))

    def test_with_connect_retries_keystoneauth_does(self):
        conf = test_faults.write_conf(
            self, test_faults.admin_token_opts(
                self.keepalive.endpoint, connect_retries=1,
                connect_retry_delay=0.01),
            {'decision_timeout': 60, 'strategy': 'tree_traits'})
        self.decide_twice(conf, test_faults.new_client(conf))
        self.assertNotIn('broke before its answer', self.log.output)
        self.assertIn('Retrying in', self.log.output)


class TestConcurrentDecisions(LoadTestBase):

    def run_concurrently(self, workers, tasks):
        confs = {s: self.conf_for(s) for s in STRATEGIES}
        plan = [(STRATEGIES[i % len(STRATEGIES)],
                 TRAIT if (i // len(STRATEGIES)) % 2 == 0 else ABSENT)
                for i in range(tasks)]
        start = threading.Barrier(min(workers, tasks))

        def one(item):
            strategy, trait = item
            try:
                start.wait(timeout=10)
            except threading.BrokenBarrierError:
                pass
            return item, engine.decide(self.rebuild(trait),
                                       conf=confs[strategy],
                                       client=self.client)

        started = time.monotonic()
        with futures.ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(one, plan))
        elapsed = time.monotonic() - started
        wrong = [(item, r.outcome, r.cause, r.detail)
                 for item, r in outcomes if r.outcome != EXPECTED[item]]
        self.assertEqual([], wrong)
        errors = [r for _i, r in outcomes if r.outcome == decision.ERROR]
        self.assertEqual([], errors)
        sent = sum(r.requests for _i, r in outcomes)
        self.assertEqual(sent, self.keepalive.requests)
        return outcomes, elapsed

    def test_250_concurrent_decisions_50_workers(self):
        outcomes, elapsed = self.run_concurrently(WORKERS, TASKS)
        server = self.keepalive
        pool = pool_maxsize(self.client)
        counts = collections.Counter(r.outcome for _i, r in outcomes)
        self.addDetailUniqueName('load', _text(
            'decisions=%d workers=%d elapsed=%.2fs requests=%d '
            'connections_opened=%d peak_open=%d pool_maxsize=%d '
            'outcomes=%s' % (TASKS, WORKERS, elapsed, server.requests,
                             server.accepted, server.peak, pool,
                             dict(counts))))
        # Connections are reused: fewer than requests, never more at once
        # than threads asking...
        self.assertLess(server.accepted, server.requests)
        self.assertLessEqual(server.peak, WORKERS)
        # ...and none leaks: what stays open is bounded by the pool.
        time.sleep(0.2)
        self.assertLessEqual(len(established_to(server.port)), pool)

    def test_connections_opened_bounded_by_pool_size(self):
        # More workers than pool slots: the client must not open (and
        # discard) a connection for every extra thread. requests' default
        # pool does not block, so without a blocking pool this opens about
        # one connection per decision beyond the pool.
        pool = pool_maxsize(self.client)
        self.run_concurrently(WORKERS, 100)
        server = self.keepalive
        self.addDetailUniqueName('pool-50', _text(
            'workers=%d connections_opened=%d peak_open=%d requests=%d '
            'pool_maxsize=%d' % (WORKERS, server.accepted, server.peak,
                                 server.requests, pool)))
        self.assertLessEqual(server.peak, pool + 2)
        self.assertLessEqual(server.accepted, pool + 2)

    def test_connections_bounded_by_pool_when_workers_fit(self):
        # As many workers as pool slots: every connection is reused, the
        # total ever opened is bounded by the pool size.
        pool = pool_maxsize(self.client)
        self.run_concurrently(pool, 100)
        server = self.keepalive
        self.addDetailUniqueName('pool', _text(
            'workers=%d connections_opened=%d peak_open=%d requests=%d' % (
                pool, server.accepted, server.peak, server.requests)))
        self.assertLessEqual(server.accepted, pool)
        self.assertLessEqual(len(established_to(server.port)), pool)

    def test_no_connections_leak_after_errors(self):
        # Decisions failing mid-way (placement errors) return their
        # connections too.
        pool = pool_maxsize(self.client)
        app = self.keepalive.get_app()
        calls = [0]

        def flaky(environ, start_response):
            calls[0] += 1
            if calls[0] % 3 == 0 and environ['PATH_INFO'] != '/':
                start_response('500 Internal Server Error', [
                    ('Content-Type', 'application/json'),
                    ('Content-Length', '2')])
                return [b'{}']
            return app(environ, start_response)
        self.keepalive.set_app(flaky)
        confs = {s: self.conf_for(s) for s in STRATEGIES}

        def one(i):
            strategy = STRATEGIES[i % len(STRATEGIES)]
            return engine.decide(self.rebuild(TRAIT), conf=confs[strategy],
                                 client=self.client)
        with futures.ThreadPoolExecutor(max_workers=WORKERS) as ex:
            results = list(ex.map(one, range(200)))
        self.assertTrue(any(r.outcome == decision.ERROR for r in results))
        for r in results:
            self.assertIn(r.outcome, (decision.ERROR, EXPECTED[
                r.strategy, TRAIT]))
        time.sleep(0.2)
        self.assertLessEqual(len(established_to(self.keepalive.port)), pool)


def _text(text):
    from testtools import content
    return content.text_content(text)


#: Placement runs in this process too; its allocations are not ours.
SERVER_SIDE = ('*/placement/*', '*/sqlalchemy/*', '*/oslo_db/*',
               '*/webob/*', '*/wsgiref/*', '*/socketserver.py',
               '*/http/server.py', '*/routes/*', '*/microversion_parse/*',
               '*/oslo_policy/*', '*/oslo_context/*', '*/sqlite3/*',
               '*/nova_image_traits/simulate/*', '*/tests/functional/*',
               '*/tracemalloc.py', '<frozen importlib._bootstrap*>',
               '<unknown>', '*/eventlet/hubs/*')


def client_side_snapshot():
    """A tracemalloc snapshot leaving out placement's own allocations."""
    gc.collect()
    return tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, pattern) for pattern in SERVER_SIDE])


def client_side_memory(snapshot=None):
    """Bytes traced by tracemalloc, leaving out placement's own."""
    snapshot = snapshot or client_side_snapshot()
    return sum(stat.size for stat in snapshot.statistics('filename'))


def top_growth(before, after, limit=5):
    """The allocation sites that grew most, as text."""
    return '\n'.join(str(stat) for stat in
                     after.compare_to(before, 'lineno')[:limit])


class _Formatting(logging.Handler):
    """Format every record, as a real log handler would, then drop it."""

    def emit(self, record):
        self.format(record)


class MemoryTestBase(LoadTestBase):

    def setUp(self):
        super().setUp()
        # Decisions are logged at INFO in production: format them.
        # Only there: a handler a worker process may have installed on the
        # root logger (stderr) would make this a test of the console.
        handler = _Formatting(level=logging.DEBUG)
        ours = logging.getLogger('nova_image_traits')
        self.addCleanup(ours.setLevel, ours.level)
        self.addCleanup(setattr, ours, 'propagate', ours.propagate)
        self.addCleanup(ours.removeHandler, handler)
        ours.addHandler(handler)
        ours.setLevel(logging.INFO)
        ours.propagate = False

    def measure(self, strategy, total, warm=1000, trait=TRAIT):
        """Traced memory growth between decision ``warm`` and ``total``."""
        # A short deadline: under eventlet (stestr imports nova's test
        # package, which monkey-patches), every socket timeout is a hub
        # timer kept until it expires, even once cancelled.
        conf = self.conf_for(strategy, decision_timeout=2)
        expected = EXPECTED[strategy, trait]
        req = self.rebuild(trait)
        late = []

        def run(n):
            for _ in range(n):
                # A fresh request each time, as nova builds one per rebuild.
                r = engine.decide(
                    nit_request.RebuildRequest(
                        instance_uuid=req.instance_uuid,
                        compute_node_uuid=req.compute_node_uuid,
                        image_properties=dict(req.image_properties),
                        flavor=nit_flavor.Flavor(
                            vcpus=1, memory_mb=512, root_gb=1,
                            extra_specs={'resources1:CUSTOM_MAGIC': '1'}),
                        original_image_properties={}, host='test-host'),
                    conf=conf, client=self.client)
                if (r.outcome == decision.ERROR and
                        r.cause in ('deadline', 'timeout')):
                    # NOTE: the machine held this one past the short
                    # deadline; its memory counts all the same.
                    late.append(r.detail)
                elif r.outcome != expected:
                    self.fail('%s: %s %s' % (strategy, r.outcome, r.detail))

        tracemalloc.start()
        self.addCleanup(tracemalloc.stop)
        started = time.monotonic()
        run(warm)
        before = client_side_snapshot()
        run(total - warm)
        after = client_side_snapshot()
        elapsed = time.monotonic() - started
        tracemalloc.stop()
        first, last = client_side_memory(before), client_side_memory(after)
        growth = last - first
        self.addDetailUniqueName('memory-top-%s' % strategy, _text(
            top_growth(before, after)))
        self.addDetailUniqueName('memory-%s' % strategy, _text(
            '%s: %d decisions in %.1fs (%d past the deadline); traced '
            'client-side memory after %d: %d B, after %d: %d B, growth '
            '%d B' % (strategy, total, elapsed, len(late), warm, first,
                      total, last, growth)))
        # Decided, most of them: a loaded machine may hold a few past the
        # deadline, not a tenth.
        self.assertLess(len(late), total // MAX_LATE, late[:3])
        self.assertLess(growth, MAX_GROWTH, strategy)
        self.assertLess(growth / float(total - warm), MAX_PER_DECISION,
                        strategy)
        return growth


class TestMemory(MemoryTestBase):

    def test_10000_decisions_reject_strategy(self):
        self.measure('reject', 10000)

    def test_600_decisions_held_providers(self):
        # The default strategy.
        self.measure('held_providers', 600, warm=200)


@unittest.skipUnless(os.environ.get('NIT_LOAD') == '1',
                     'long load run; set NIT_LOAD=1 (tox -e load)')
class TestMemoryLong(MemoryTestBase):
    """Many sequential decisions against placement, per strategy.

    10,000 for the default strategy and ``root_traits``, 2,000 for the
    other strategies that ask placement and 2,000 failing decisions.
    """

    def test_10000_held_providers(self):
        # The default strategy.
        self.measure('held_providers', 10000)

    def test_10000_root_traits(self):
        self.measure('root_traits', 10000)

    def test_2000_tree_traits(self):
        self.measure('tree_traits', 2000, warm=500)

    def test_2000_in_tree_candidates(self):
        self.measure('in_tree_candidates', 2000, warm=500)

    def test_2000_allocation_traits(self):
        self.measure('allocation_traits', 2000, warm=500)

    def test_2000_errors(self):
        # Failing decisions (an unknown provider) do not leak either.
        self.node = str(uuid.uuid4())
        self.instance = str(uuid.uuid4())
        conf = self.conf_for('root_traits', decision_timeout=2)
        tracemalloc.start()
        self.addCleanup(tracemalloc.stop)
        first = None
        for i in range(2000):
            if i == 500:
                first = client_side_memory()
            r = engine.decide(self.rebuild(TRAIT), conf=conf,
                              client=self.client)
            self.assertEqual('provider-not-found', r.cause)
        growth = client_side_memory() - first
        self.addDetailUniqueName('memory-errors', _text(
            'errors: 2000 decisions; growth after 500: %d B' % growth))
        self.assertLess(growth, MAX_GROWTH)
        self.assertLess(growth / 1500.0, MAX_PER_DECISION)
