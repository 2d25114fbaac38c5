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
"""What a decision does beyond its own placement requests sent bare.

Usage, from the repository root, in the ``functional`` (or ``bench``)
environment::

    python tools/decision_cost.py [--strategies held_providers,...]
        [--cases root,full] [--n 0] [--background 20] [--calls 20]
        [--rounds 200]

It builds the benchmark's cloud (``benchmarks/scenario.py``) on a real
placement and, for every strategy and case, compares a decision
(``benchmarks.rebuild.Engine.decide``) with the bare replay of the same
requests that ``tox -e bench`` divides it by:

``requests`` and ``bytes``
    what the decision sends and the size of each answer;
``calls``
    Python function calls (and calls of C functions) per decision and per
    bare replay, in every thread of the process: the caller, the client's
    worker threads and the placement server's. Counted with
    ``sys.setprofile``, so they do not depend on the machine's load;
``cpu``
    the median CPU time of the whole process per decision and per bare
    replay, over ``--rounds`` rounds that alternate the two.

Placement runs in the same process, so both paths include the same server
work: the difference is the decision's own.
"""

import argparse
import collections
import logging
import os
import statistics
import sys
import threading
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from benchmarks import rebuild  # noqa: E402
from benchmarks import scenario  # noqa: E402
from nova_image_traits import placement  # noqa: E402

#: Where a Python function's file lies, by the first matching part.
KINDS = (('nova_image_traits', 'engine'), ('benchmarks', 'harness'),
         ('keystoneauth1', 'keystoneauth'), ('/requests/', 'requests'),
         ('/urllib3/', 'requests'), ('oslo_config', 'oslo.config'),
         ('site-packages', 'placement server'), ('', 'standard library'))


class CallCounter:
    """Count calls in every thread while :attr:`on`, by kind of code.

    Install it before the threads to count start: ``sys.setprofile`` for
    the calling thread, ``threading.setprofile`` for the threads started
    later.
    """

    def __init__(self):
        self.on = False
        self.paused = None
        self.counts = collections.Counter()
        self._kinds = {}

    def install(self):
        sys.setprofile(self.profile)
        threading.setprofile(self.profile)

    def uninstall(self):
        sys.setprofile(None)
        threading.setprofile(None)

    def _kind(self, filename):
        kind = self._kinds.get(filename)
        if kind is None:
            kind = next(k for part, k in KINDS if part in filename)
            self._kinds[filename] = kind
        return kind

    def profile(self, frame, event, _arg):
        if not self.on or threading.get_ident() == self.paused:
            return
        if event == 'call':
            self.counts[self._kind(frame.f_code.co_filename)] += 1
        elif event == 'c_call':
            self.counts['C functions'] += 1

    def count(self, func, times, idle_threads):
        """Return the calls of ``times`` runs of ``func``, by kind.

        After each run, wait uncounted until the server's handler threads
        have ended, so that their work is counted with the run.
        """
        self.counts.clear()
        for _i in range(times):
            self.on = True
            func()
            self.paused = threading.get_ident()
            while threading.active_count() > idle_threads:
                time.sleep(0.0005)
            self.paused = None
            self.on = False
        return collections.Counter({k: v / times
                                    for k, v in self.counts.items()})


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python tools/decision_cost.py', description=__doc__.split(
            '\n\n')[0])
    parser.add_argument('--strategies',
                        default='held_providers,allocation_traits')
    parser.add_argument('--cases', default='root,full')
    parser.add_argument('--n', type=int, default=0,
                        help='children of the measured compute nodes')
    parser.add_argument('--background', type=int, default=20,
                        help='background hosts (the benchmark has 200)')
    parser.add_argument('--calls', type=int, default=20,
                        help='counted decisions (and replays) per cell')
    parser.add_argument('--rounds', type=int, default=200,
                        help='timed rounds; 0 to skip the timing')
    return parser.parse_args(argv)


def _cpu_medians(cells, rounds):
    """Alternate every cell's decision and bare replay; median CPU (ms)."""
    found = collections.defaultdict(list)
    for rnd in range(rounds):
        for index in range(len(cells)):
            label, decide, replay = cells[(index + rnd) % len(cells)]
            pair = [('decision', decide), ('bare', replay)]
            for kind, func in pair[::-1] if rnd % 2 else pair:
                start = time.process_time()
                func()
                found[label, kind].append(time.process_time() - start)
    return {key: statistics.median(values) * 1000.0
            for key, values in found.items()}


def main(argv=None):
    args = parse_args(argv)
    warnings.simplefilter('ignore')
    logging.getLogger().setLevel(logging.ERROR)
    counter = CallCounter()
    cloud = scenario.Cloud().start()
    try:
        cloud.add_background(args.background)
        cloud.add_host(args.n)
        cloud.add_host(args.n, full=True)
        cases = {c.name: c for c in scenario.cases_for(args.n)}
        # NOTE: from here on every new thread is counted: the client's
        # worker threads and the server's handler threads.
        counter.install()
        engine = rebuild.Engine(cloud)
        cells = []
        for strategy in args.strategies.split(','):
            for name in args.cases.split(','):
                case, host = cases[name], cloud.host(args.n, cases[name])
                for _i in range(3):
                    engine.decide(strategy, host, case)
                plan = engine._plans[(strategy, host.root, name)]
                cells.append(((strategy, name),
                              lambda s=strategy, h=host, c=case:
                              engine.decide(s, h, c),
                              lambda p=plan: engine.replay(p)))
                print('%s, %s: %s' % (strategy, name, ', '.join(
                    '%s (%d bytes)' % (url.split('?')[0], len(
                        engine._bare.get(
                            cloud.server.endpoint + url, headers={
                                'OpenStack-API-Version':
                                    'placement %s' % version}).content))
                    for url, version in plan)))
        idle = threading.active_count()
        print('\nCalls per decision and per bare replay (%d each), all '
              'threads:' % args.calls)
        for label, decide, replay in cells:
            ours = counter.count(decide, args.calls, idle)
            bare = counter.count(replay, args.calls, idle)
            extra = {k: ours[k] - bare[k] for k in set(ours) | set(bare)}
            print('%-32s %8.0f %8.0f  %+6.0f: %s' % (
                '%s, %s' % label, sum(ours.values()), sum(bare.values()),
                sum(extra.values()), ', '.join(
                    '%s %+.0f' % (k, v) for k, v in sorted(
                        extra.items(), key=lambda kv: -abs(kv[1]))
                    if round(v))))
        counter.uninstall()
        if args.rounds:
            placement.reset_clients()
            for _label, decide, _replay in cells:
                decide()
            medians = _cpu_medians(cells, args.rounds)
            print('\nMedian process CPU, ms, over %d alternating rounds '
                  '(load average %.1f):' % (args.rounds, os.getloadavg()[0]))
            for label, _d, _r in cells:
                ours, bare = medians[label, 'decision'], medians[
                    label, 'bare']
                print('%-32s %6.2f %6.2f  %+.2f (%.2fx)' % (
                    '%s, %s' % label, ours, bare, ours - bare, ours / bare))
        engine.close()
    finally:
        counter.uninstall()
        cloud.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
