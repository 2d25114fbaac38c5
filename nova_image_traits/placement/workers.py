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
"""Daemon threads that send placement requests for decisions.

A decision must be able to stop waiting: neither a Keystone token fetch
nor keystoneauth's retries can be interrupted, and they must not hold the
decision (nor nova's RPC worker) past its deadline. So each request runs in
a worker thread and the decision waits for it no longer than it may.

The threads are kept and reused: handing a request to a waiting thread
costs a fraction of starting one. They are daemon threads, which is why
this is not ``concurrent.futures.ThreadPoolExecutor``: its threads are
joined at exit, so one request hung on placement would hold up the
conductor's shutdown. A request the decision stopped waiting for keeps its
thread and its slot until it ends; keystoneauth bounds each connect and
each read by its timeout, so a placement that keeps sending slowly can
hold them longer. The other decisions use the other threads. A forked
child starts with none.
"""

import os
import queue
import threading
import weakref

# Every Workers of the process, reset in a forked child.
_ALL = weakref.WeakSet()


def _after_fork_in_child():
    # NOTE(founders): threads do not survive a fork (nova's API and
    # conductor workers are forked): the child's counts, locks and queue
    # would name threads it does not have. This runs in the child before
    # any other of its threads exists.
    for workers in list(_ALL):
        workers._reset()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Abandoned(Exception):
    """The caller stopped waiting: no slot, or no answer, before its end."""

    def __init__(self, waited_for):
        super().__init__(waited_for)
        #: 'slot' (every thread busy) or 'answer'
        self.waited_for = waited_for


class Workers:
    """At most ``size`` threads, each running one call at a time.

    :param size: the most calls in flight; a caller waits for a free thread
        no longer than its deadline
    :param name: the threads' name
    """

    def __init__(self, size, name='nova-image-traits-placement'):
        self.size = size
        self.name = name
        self._reset()
        _ALL.add(self)

    def _reset(self):
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.size)
        # NOTE(founders): queue.Queue, not SimpleQueue: where nova runs
        # under eventlet, monkey patching makes queue.Queue a green queue,
        # while SimpleQueue is C code whose get() would block the hub.
        self._tasks = queue.Queue()
        self._idle = 0
        self.started = 0

    def call(self, func, wait, grace=0.0):
        """Return ``func()``, run in a worker, or raise what it raised.

        :param wait: a callable returning the seconds the caller may still
            wait; it is asked once for a free thread and once for the answer
        :param grace: seconds added to the wait for the answer
        :raises: Abandoned when either wait runs out
        """
        left = wait()
        if left <= 0 or not self._slots.acquire(timeout=left):
            raise Abandoned('slot')
        return self._run(func).result(max(0.0, wait()) + grace)

    def submit(self, func):
        """Start ``func()`` in a worker and return at once.

        :returns: a :class:`Pending`, or None when every thread is busy
            (the caller then does the work itself, or goes without)
        """
        if not self._slots.acquire(blocking=False):
            return None
        return self._run(func)

    def _run(self, func):
        # The caller holds a slot.
        pending = Pending()
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                try:
                    threading.Thread(target=self._work, daemon=True,
                                     name=self.name).start()
                except BaseException:
                    # NOTE(founders): no thread (the process is at its
                    # limit): give the slot back, or it is lost for good.
                    self._slots.release()
                    raise
                self.started += 1
        self._tasks.put((func, pending.box, pending.done))
        return pending

    def _work(self):
        tasks, lock, slots = self._tasks, self._lock, self._slots
        while True:
            func, box, done = tasks.get()
            try:
                box['result'] = func()
            except BaseException as e:
                box['error'] = e
            # NOTE(founders): free before waking the caller, whose next
            # request then finds this thread idle.
            with lock:
                self._idle += 1
            slots.release()
            done.set()


class Pending:
    """The answer of a call handed to a worker, once it is there."""

    def __init__(self):
        self.box = {}
        self.done = threading.Event()

    def result(self, timeout):
        """Return what the call returned, or raise what it raised.

        :param timeout: seconds to wait for it at most
        :raises: Abandoned when it is not there in time
        """
        if not self.done.wait(max(0.0, timeout)):
            raise Abandoned('answer')
        if 'error' in self.box:
            raise self.box['error']
        return self.box['result']
