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
"""A scenario loaded into a real placement, and every strategy judging it.

The scenario's providers, traits and aggregates are written to placement
through its HTTP API, then each server's allocations: the ones the scenario
gives, or the first allocation candidate placement offers for the server's
flavor and image on its host, as at boot. Hosts marked ``full`` then have
their remaining VCPU consumed. Every strategy then judges every case.
"""

import collections
import dataclasses
import uuid as uuid_lib

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits.cli import isolation as cli_isolation
from nova_image_traits import placement
from nova_image_traits.placement import query as pl_query
from nova_image_traits import request as nit_request
from nova_image_traits.simulate import cloud as sim_cloud
from nova_image_traits.simulate import dot
from nova_image_traits.simulate import scenario as nit_scenario
from nova_image_traits import traits as nit_traits

LOG = logging.getLogger(__name__)

PROJECT = 'simulated-project'
USER = 'simulated-user'


@dataclasses.dataclass
class Judged:
    """One case, judged: what the tables and the drawing show."""
    case: nit_scenario.Case
    request: nit_request.RebuildRequest
    where: str
    decisions: list
    panel: dot.Panel = None


def judge(scn, cases, decide, drawing=False, deriver=None):
    """Load ``scn`` into a placement and judge ``cases`` in it.

    :param decide: ``(request, client) -> [Decision]``, one per strategy
    :param drawing: also read each case's tree back, for ``-f dot``
    :param deriver: a :class:`~nova_image_traits.cli.derive.Deriver`
        adding what nova derives from each new image; None judges the
        images' ``trait:`` properties alone
    :returns: a :class:`Judged` per case, in order
    """
    results = []
    with SimulatedCloud(scn, deriver) as cloud:
        auth = token_endpoint.Token(cloud.server.endpoint, cloud.server.token)
        client = placement.PlacementClient(ks_adapter.Adapter(
            ks_session.Session(auth=auth), service_type='placement',
            endpoint_override=cloud.server.endpoint))
        for case in cases:
            request = cloud.request(case)
            decisions = decide(request, client)
            results.append(Judged(
                case, request, cloud.where(request), decisions,
                dot.panel(cloud, case, request, decisions) if drawing
                else None))
    return results


class SimulatedCloud:
    """A scenario loaded into a real placement running in this process.

    A context manager: entering starts placement and loads the scenario.

    :ivar providers: provider name to UUID
    :ivar servers: server name to UUID (its placement consumer)
    :ivar allocations: server UUID to ``{rp_uuid: {rc: amount}}``
    """

    def __init__(self, scn, deriver=None):
        self.scenario = scn
        self.deriver = deriver
        self.providers = {}
        self.servers = {}
        self.allocations = {}
        # NOTE(founders): an aggregate name's UUID, made on first use.
        self.aggregates = collections.defaultdict(
            lambda: str(uuid_lib.uuid4()))
        self.server = None
        self.builder = None

    def __enter__(self):
        try:
            # NOTE(founders): placement is the [simulate] extra; a scenario
            # is validated before it is needed.
            from nova_image_traits.simulate import server as sim_server
        except ImportError as e:
            raise cli.UsageError(
                'simulate needs openstack-placement (pip install '
                '"nova-image-traits[simulate]"): %s' % e)
        self.server = sim_server.PlacementServer().start()
        try:
            self.builder = sim_cloud.CloudBuilder(self.server.endpoint,
                                                  token=self.server.token)
            self._build()
        except BaseException:
            self.server.stop()
            raise
        return self

    def __exit__(self, *exc_info):
        self.server.stop()
        return False

    # -- building --------------------------------------------------------

    def _build(self):
        scn, b = self.scenario, self.builder
        for sp in scn.sharing_providers:
            rp = b.make_sharing_provider(
                sp.name, self.aggregates[sp.aggregates[0]], sp.inventory,
                sp.traits)
            for agg in sp.aggregates[1:]:
                b.add_to_aggregate(rp, self.aggregates[agg])
            self.providers[sp.name] = rp
        for host in scn.hosts:
            node = b.create_compute_node(
                host.name, vcpus=host.vcpus, memory_mb=host.memory_mb,
                disk_gb=host.disk_gb, traits=host.traits,
                children=[dataclasses.asdict(c) for c in host.children])
            self.providers[host.name] = node.uuid
            self.providers.update(node.children)
            for agg in host.aggregates:
                b.add_to_aggregate(node.uuid, self.aggregates[agg])
        # NOTE(founders): in the file's order: where placement puts a
        # server depends on the servers placed before it.
        for server in scn.servers:
            consumer = str(uuid_lib.uuid4())
            allocs = self._choose(server) if server.allocations is None else {
                self.providers[name]: dict(resources)
                for name, resources in server.allocations.items()}
            b.allocate(consumer, allocs, PROJECT, USER)
            self.servers[server.name] = consumer
            self.allocations[consumer] = allocs
        # A full host: the VCPU left on every provider of its tree is used.
        for host in [h for h in scn.hosts if h.full]:
            for rp in [self.providers[name] for name in host.tree()]:
                if 'VCPU' in b.get('/resource_providers/%s/inventories'
                                   % rp)['inventories']:
                    b.fill(rp, 'VCPU')
        LOG.debug('Simulated cloud %(src)s: %(p)d providers, %(s)d servers',
                  {'src': scn.source, 'p': len(self.providers),
                   's': len(self.servers)})

    def sharing(self, host):
        """The UUIDs of the sharing providers of a host's aggregates."""
        return {self.providers[sp.name]
                for sp in self.scenario.sharing(host)}

    def _choose(self, server):
        """The allocation placement offers at boot on the server's host."""
        scn = self.scenario
        host = scn.by_name('hosts')[server.host]
        flavor = scn.by_name('flavors')[server.flavor].to_flavor()
        # As at boot: with the image's properties the server recorded.
        properties = server.current(scn.by_name('images'))
        query = flavor.resource_query()
        traits = nit_traits.image_traits(properties).required
        root = self.providers[host.name]
        tree = {self.providers[name] for name in host.tree()}
        usable = tree | self.sharing(host)
        # NOTE(founders): in a tree first; placement leaves sharing
        # providers out of in_tree queries, so a host whose disk is shared
        # needs the unrestricted query, filtered to this host.
        for in_tree in (root, None):
            body = self.builder.get(
                '/allocation_candidates?' + pl_query.urlencode(
                    pl_query.candidate_params(query, in_tree,
                                              image_traits=traits)))
            for areq in body['allocation_requests']:
                allocs = areq['allocations']
                if set(allocs) <= usable and set(allocs) & tree:
                    return {rp: dict(a['resources'])
                            for rp, a in allocs.items()}
        raise nit_scenario.ScenarioError(
            scn.source, server.lines.get('host'), server.path + '.host',
            'placement has no room for flavor %s on host %s; give the '
            'server explicit allocations' % (flavor.name, host.name))

    # -- judging ---------------------------------------------------------

    def request(self, case):
        """The :class:`RebuildRequest` of a case.

        With what nova derives from the new image, under the case's
        ``[scheduler]`` options, when the cloud has a deriver.
        """
        scn = self.scenario
        server = scn.by_name('servers')[case.server]
        request = nit_request.RebuildRequest(
            instance_uuid=self.servers[server.name],
            compute_node_uuid=self.providers[server.host],
            image_properties=scn.by_name('images')[case.image].glance(),
            flavor=scn.by_name('flavors')[server.flavor].to_flavor(),
            original_image_properties=self._recorded(server),
            host=server.host)
        options = dict(case.scheduler)
        isolating = options.pop(cli_isolation.OPTION, None)
        if self.deriver is not None:
            request = self.deriver.request(request, scheduler=options)
            if isolating is None:
                isolating = cli_isolation.enabled(self.deriver.conf)
        if not (isolating and scn.isolated_aggregates):
            return request
        # NOTE(founders): nova's isolate_aggregates reads the API database;
        # here the scenario's aggregates stand in for it.
        pairs = [(self.aggregates[name], {
            cli_isolation.PREFIX + t: cli_isolation.REQUIRED for t in traits})
            for name, traits in sorted(scn.isolated_aggregates.items())]
        return dataclasses.replace(
            request, forbidden_aggregates=cli_isolation.forbidden(
                pairs, cli_isolation.required_traits(request)))

    def _recorded(self, server):
        """The server's current image as it recorded it, as Glance sends it.

        A same-image case judges the image's new properties against these,
        as the nova-api pre-check does.
        """
        images = self.scenario.by_name('images')
        flat = images[server.image].glance()
        if server.recorded is not None:
            flat = dict(server.current(images), **{
                k: v for k, v in flat.items() if k == 'disk_format'})
        return flat

    def where(self, request):
        """Say where the new image's required traits sit, for the table."""
        host = self.scenario.by_name('hosts')[request.host]
        wanted = nit_traits.image_traits(request.image_properties)
        if wanted.invalid:
            return 'invalid name'
        allocated = self.allocations[request.instance_uuid]
        # The image's traits and those nova derives it needs: where the
        # derived ones it forbids are is no less telling.
        derived = request.derived.traits if request.derived else ()
        forbidden = {r.trait for r in derived if r.forbidden}
        names = set(wanted.required) | {r.trait for r in derived}
        cells, texts = [], set()
        for trait in sorted(names):
            places = ['root'] if trait in host.traits else []
            places += [self._named('child', c.name, host.name + '-',
                                   allocated)
                       for c in host.children if trait in c.traits]
            places += [self._named('sharing', sp.name, '', allocated)
                       for sp in self.scenario.sharing(host)
                       if trait in sp.traits]
            text = ', '.join(places) or 'nowhere'
            if trait in request.flavor.forbidden_traits:
                text += ' (forbidden by flavor)'
            if trait in forbidden:
                text += ' (forbidden by image)'
            texts.add(text)
            cells.append('%s: %s' % (trait, text))
        if len(texts) == 1:
            # Every trait in the same place: say it once.
            return texts.pop()
        return '; '.join(cells) or '-'

    def _named(self, kind, name, prefix, allocated):
        mark = ' (allocated)' if self.providers[name] in allocated else ''
        return '%s %s%s' % (kind, name.removeprefix(prefix), mark)
