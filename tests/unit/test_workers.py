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
"""The worker threads that let a decision stop waiting.

No test here bounds a wall time. A call that must be abandoned is given
a short wait and nothing ever answers it, so it is abandoned whenever
the machine runs it; a call that must be answered is given :data:`AMPLE`,
a wait no pause of the machine uses up: the tests check which thread runs
what, and how many threads there are, never how long it took.
"""

import os
import threading
from unittest import mock

from nova_image_traits.placement import workers
from tests.unit import base


def _forever(seconds):
    return lambda: seconds


#: The wait of a call that must be answered.
AMPLE = _forever(60)


class WorkersTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.release = threading.Event()
        # NOTE(founders): never leave a worker blocked after a test.
        self.addCleanup(self.release.set)

    def test_returns_the_answer_from_another_thread(self):
        pool = workers.Workers(2)
        caller = threading.get_ident()
        self.assertNotEqual(caller, pool.call(threading.get_ident, AMPLE))

    def test_threads_are_reused(self):
        pool = workers.Workers(4)
        idents = {pool.call(threading.get_ident, AMPLE) for _i in range(20)}
        self.assertEqual(1, pool.started)
        self.assertEqual(1, len(idents))

    def test_raises_what_the_call_raised(self):
        pool = workers.Workers(1)

        def fail():
            raise KeyError('boom')

        self.assertRaises(KeyError, pool.call, fail, AMPLE)
        # The thread survives the error and serves the next call.
        self.assertEqual(3, pool.call(lambda: 3, AMPLE))
        self.assertEqual(1, pool.started)

    def test_stops_waiting_for_a_hung_call(self):
        pool = workers.Workers(2)
        err = self.assertRaises(workers.Abandoned, pool.call,
                                self.release.wait, _forever(0.05))
        self.assertEqual('answer', err.waited_for)
        # The hung call keeps its thread; the next call gets another one.
        self.assertEqual(4, pool.call(lambda: 4, AMPLE))
        self.assertEqual(2, pool.started)

    def test_every_thread_busy_is_a_slot_timeout(self):
        pool = workers.Workers(1)
        self.assertRaises(workers.Abandoned, pool.call, self.release.wait,
                          _forever(0.05))
        err = self.assertRaises(workers.Abandoned, pool.call, lambda: 5,
                                _forever(0.05))
        self.assertEqual('slot', err.waited_for)
        self.assertEqual(1, pool.started)
        self.release.set()
        # The slot is free again once the hung call ends.
        self.assertEqual(5, pool.call(lambda: 5, AMPLE))

    def test_a_thread_freed_by_its_hung_call_is_reused(self):
        # One slot: the next call waits for it until the hung call has
        # ended and its thread is idle again, whenever that is.
        pool = workers.Workers(1)
        hung = []

        def hang():
            hung.append(threading.get_ident())
            self.release.wait()

        err = self.assertRaises(workers.Abandoned, pool.call, hang,
                                _forever(0.05))
        self.assertEqual('answer', err.waited_for)
        self.release.set()
        idents = {pool.call(threading.get_ident, AMPLE) for _i in range(5)}
        # The freed thread runs them all: no other thread was started.
        self.assertEqual(set(hung), idents)
        self.assertEqual(1, pool.started)

    def test_no_thread_gives_the_slot_back(self):
        pool = workers.Workers(1)
        with mock.patch.object(threading.Thread, 'start',
                               side_effect=RuntimeError("can't start")):
            self.assertRaises(RuntimeError, pool.call, lambda: 1, AMPLE)
        self.assertEqual(0, pool.started)
        # The only slot is free again.
        self.assertEqual(1, pool.call(lambda: 1, AMPLE))

    def test_no_time_left_runs_nothing(self):
        pool = workers.Workers(1)
        ran = []
        err = self.assertRaises(workers.Abandoned, pool.call,
                                lambda: ran.append(1), _forever(0))
        self.assertEqual('slot', err.waited_for)
        self.assertEqual([], ran)
        self.assertEqual(0, pool.started)

    def test_concurrent_callers_never_share_a_thread(self):
        pool = workers.Workers(4)
        started = threading.Barrier(4, timeout=AMPLE())
        answers = []

        def caller():
            answers.append(pool.call(
                lambda: (started.wait(), threading.get_ident())[1],
                AMPLE))

        threads = [threading.Thread(target=caller) for _i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # NOTE(founders): the barrier only opens when all 4 calls run at
        # once, in 4 threads.
        self.assertEqual(4, len(set(answers)))
        self.assertEqual(4, pool.started)

    def test_a_forked_child_starts_its_own_threads(self):
        pool = workers.Workers(2)
        pool.call(lambda: None, AMPLE)
        self.assertEqual(1, pool.started)
        pid = os.fork()
        if pid == 0:
            # NOTE(founders): the child has the counts but not the thread.
            try:
                code = 0 if pool.call(lambda: 7, AMPLE) == 7 else 1
            except BaseException:
                code = 2
            os._exit(code)
        _pid, status = os.waitpid(pid, 0)
        self.assertEqual(0, os.waitstatus_to_exitcode(status))


class SubmitTest(base.TestCase):
    """A call started now and read later."""

    def setUp(self):
        super().setUp()
        self.release = threading.Event()
        self.addCleanup(self.release.set)

    def test_answer_read_later_from_another_thread(self):
        pool = workers.Workers(2)
        pending = pool.submit(threading.get_ident)
        self.assertNotEqual(threading.get_ident(), pending.result(60))
        self.assertEqual(1, pool.started)

    def test_error_raised_when_read(self):
        pool = workers.Workers(1)
        pending = pool.submit(lambda: {}['missing'])
        self.assertRaises(KeyError, pending.result, 60)

    def test_every_thread_busy_sends_nothing(self):
        pool = workers.Workers(1)
        hung = pool.submit(self.release.wait)
        self.assertIsNone(pool.submit(lambda: 1))
        err = self.assertRaises(workers.Abandoned, hung.result, 0.05)
        self.assertEqual('answer', err.waited_for)
        self.release.set()
        self.assertTrue(hung.result(60))
        # Its slot is free again.
        self.assertEqual(2, pool.submit(lambda: 2).result(60))
