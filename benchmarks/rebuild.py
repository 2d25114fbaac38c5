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
"""Time :func:`nova_image_traits.engine.decide` for every strategy.

Each decision is timed by the caller (``time.perf_counter``) and its
placement requests are counted twice: by the engine
(``Decision.requests``) and by the server's recorder. The process-wide
placement client negotiates its microversion once; :meth:`Engine.negotiate`
measures that first decision on its own so that steady-state samples never
include it.
"""

import dataclasses
import time

from oslo_config import cfg
import requests

from nova_image_traits import conf as nit_conf
from nova_image_traits import engine
from nova_image_traits import placement

from benchmarks import scenario

#: Every strategy, in report order; ``reject`` never calls placement.
STRATEGIES = ('held_providers', 'reject', 'root_traits', 'tree_traits',
              'in_tree_candidates', 'allocation_traits')
#: The microversion discovery request.
VERSION_REQUEST = ('GET', '/')


@dataclasses.dataclass
class Sample:
    """One timed decision.

    :ivar seconds: wall-clock latency seen by the caller
    :ivar cpu: CPU seconds of the whole process (client and server)
    :ivar requests: ``Decision.requests``
    :ivar recorded: requests the placement server saw
    :ivar outcome: the decision's outcome, with the fallback if one decided
    :ivar discovery: whether a ``GET /`` was among the requests
    :ivar bare: seconds the same requests take alone, sent one after the
        other over a plain keep-alive ``requests`` session: the placement
        floor of the decision (None when not measured)
    :ivar cause: the decision's cause (None when it gave none)
    """
    seconds: float
    cpu: float
    requests: int
    recorded: int
    outcome: str
    discovery: bool
    bare: float = None
    cause: str = None


class Engine:
    """Our engine, pointed at the benchmark placement.

    :param cloud: the :class:`~benchmarks.scenario.Cloud`
    """

    def __init__(self, cloud):
        self.cloud = cloud
        self._path = cloud.placement_conf_file('nova-image-traits.conf')
        # NOTE(founders): one configuration per strategy, as a deployment has
        # one strategy in nova.conf: a set_override per decision would empty
        # oslo.config's cache and time option parsing, not the decision.
        self._confs = {}
        placement.reset_clients()
        self._sent = []
        self._calls = 0
        # (strategy, root, case) -> the requests its last decision sent
        self._plans = {}
        self._bare = requests.Session()
        self._bare.headers.update({'X-Auth-Token': cloud.server.token,
                                   'Accept': 'application/json'})
        # NOTE(founders): record what the engine sends (URL and microversion),
        # to replay it bare.
        original = placement.PlacementClient.request
        sent = self._sent

        def request(client, url, version, *args, **kwargs):
            sent.append((url, version))
            return original(client, url, version, *args, **kwargs)
        self._restore = (placement.PlacementClient, 'request', original)
        placement.PlacementClient.request = request

    def conf(self, strategy):
        """Return the configuration that selects ``strategy``."""
        conf = self._confs.get(strategy)
        if conf is None:
            conf = cfg.ConfigOpts()
            nit_conf.register_opts(conf)
            conf(['--config-file', self._path], project='nova-image-traits',
                 default_config_files=[], default_config_dirs=[])
            conf.set_override('strategy', strategy, 'image_traits')
            self._confs[strategy] = conf
        return conf

    def close(self):
        """Restore the client and close the bare session."""
        setattr(*self._restore)
        self._bare.close()

    def replay(self, sent):
        """Send ``sent`` again, bare; return the seconds it took.

        :returns: None when there is nothing to send
        """
        if not sent:
            # NOTE(founders): no placement floor to compare with (reject).
            return None
        endpoint = self.cloud.server.endpoint
        start = time.perf_counter()
        for url, version in sent:
            headers = {}
            if version is not None:
                headers['OpenStack-API-Version'] = 'placement %s' % version
            self._bare.get(endpoint + url, headers=headers).content
        return time.perf_counter() - start

    def decide(self, strategy, host, case, bare=False, derived=None,
               forbidden=()):
        """Run one decision and return its :class:`Sample`.

        :param strategy: the strategy name
        :param host: a :class:`~benchmarks.scenario.Host`
        :param case: a :class:`~benchmarks.scenario.Case`
        :param bare: also time the decision's own requests sent bare,
            before the decision on one call and after it on the next, so
            that neither order is favoured
        :param derived: the requirements nova derives from the new image,
            a :class:`~nova_image_traits.requirements.Derived`
        :param forbidden: the aggregates a boot of the new image may not
            use, as nova's ``isolate_aggregates`` finds them
        """
        conf = self.conf(strategy)
        request = scenario.rebuild_request(host, case)
        if derived is not None:
            request = dataclasses.replace(request, derived=derived)
        if forbidden:
            request = dataclasses.replace(
                request, forbidden_aggregates=frozenset(forbidden))
        self._calls += 1
        replay_first = bare and self._calls % 2
        before = self._replay_plan(strategy, host, case) if replay_first \
            else None
        bare_seconds = self.replay(before) if before else None
        self.cloud.recorded()
        del self._sent[:]
        cpu = time.process_time()
        start = time.perf_counter()
        result = engine.decide(request, conf=conf)
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu
        records = self.cloud.recorded()
        sent = list(self._sent)
        self._plans[(strategy, host.root, case.name)] = sent
        if bare and not replay_first:
            bare_seconds = self.replay(sent)
            self.cloud.recorded()
        outcome = result.outcome
        if result.fallback:
            outcome = '%s (%s)' % (outcome, result.fallback)
        return Sample(seconds, cpu, result.requests, len(records), outcome,
                      VERSION_REQUEST in records, bare_seconds, result.cause)

    def _replay_plan(self, strategy, host, case):
        return self._plans.get((strategy, host.root, case.name))

    def negotiate(self, host, case):
        """Measure the first decision of the process, then a warm one.

        ``in_tree_candidates`` is the strategy that asks placement for its
        microversion, which the client does once per process.

        :returns: a dict for the report
        """
        placement.reset_clients()
        first = self.decide('in_tree_candidates', host, case)
        warm = [self.decide('in_tree_candidates', host, case)
                for _i in range(5)]
        steady = sorted(s.seconds for s in warm)[len(warm) // 2]
        return {
            'strategy': 'in_tree_candidates',
            'first_decision_requests': first.requests,
            'first_decision_recorded': first.recorded,
            'first_decision_ms': first.seconds * 1000.0,
            'steady_requests': warm[-1].requests,
            'steady_ms': steady * 1000.0,
            'negotiation_requests': first.requests - warm[-1].requests,
            'version_request_seen': first.discovery,
            'version_request_repeated': any(s.discovery for s in warm),
        }
