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
"""``nova-image-traits simulate``: every strategy on a simulated cloud.

A real placement (``openstack-placement`` on SQLite) runs in this process.
The scenario's providers, traits and aggregates are written to it through
its HTTP API, then each server's allocations: the ones the scenario gives,
or the first allocation candidate placement offers for the server's flavor
and image on its host, as at boot. Hosts marked ``full`` then have their
remaining VCPU consumed. Every strategy then judges every rebuild case.
"""

import importlib.resources
import os
import urllib.parse
import uuid as uuid_lib

from cliff import lister
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_log import log as logging
from stevedore import extension

from nova_image_traits import cli
from nova_image_traits.cli import compact
from nova_image_traits.cli import dot
from nova_image_traits.cli import scenario as nit_scenario
from nova_image_traits import placement
from nova_image_traits import request as nit_request
from nova_image_traits import traits as nit_traits

LOG = logging.getLogger(__name__)

SAMPLE = 'sample-cloud.yaml'
SAMPLE_PACKAGE = 'nova_image_traits.simulate'
PROJECT = 'simulated-project'
USER = 'simulated-user'


def default_scenario_path():
    """Return the path of the bundled sample scenario.

    The sample ships inside the package (``nova_image_traits/simulate/``)
    and is found through :mod:`importlib.resources`, so a source checkout,
    an editable install and an installed wheel all read the same file. A
    copy for deployers to edit is also installed under
    ``<prefix>/etc/nova-image-traits/``.

    :raises UsageError: when the package holds no sample
    """
    resource = importlib.resources.files(SAMPLE_PACKAGE) / SAMPLE
    if not resource.is_file():
        raise cli.UsageError('cannot find the bundled %s; give --scenario '
                             'FILE' % SAMPLE)
    # NOTE: a package installed on a file system (a wheel, an editable
    # install) gives a real path; scenario.load() reads paths.
    return os.path.realpath(str(resource))


def _candidate_query(query, root=None, image_traits=()):
    """``GET /allocation_candidates`` URL for a boot query."""
    return '/allocation_candidates?' + urllib.parse.urlencode(
        placement.candidate_params(query, root, image_traits=image_traits))


class SimulatedCloud(object):
    """A scenario loaded into a real placement running in this process.

    :ivar providers: provider name to UUID
    :ivar servers: server name to UUID (its placement consumer)
    :ivar allocations: server name to ``{rp_uuid: {rc: amount}}``
    """

    def __init__(self, scn):
        self.scenario = scn
        self.providers = {}
        self.servers = {}
        self.allocations = {}
        self.aggregates = {}
        self.server = None
        self.builder = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
        return False

    def start(self):
        """Start placement and load the scenario into it."""
        try:
            from nova_image_traits.simulate import cloud as sim_cloud
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
            self.stop()
            raise
        return self

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None

    def client(self):
        """A :class:`~nova_image_traits.placement.PlacementClient` for it."""
        auth = token_endpoint.Token(self.server.endpoint, self.server.token)
        adapter = ks_adapter.Adapter(
            ks_session.Session(auth=auth), service_type='placement',
            endpoint_override=self.server.endpoint)
        return placement.PlacementClient(adapter)

    # -- building --------------------------------------------------------

    def _aggregate(self, name):
        return self.aggregates.setdefault(name, str(uuid_lib.uuid4()))

    def _build(self):
        scn, b = self.scenario, self.builder
        for sp in scn.sharing_providers:
            aggs = [self._aggregate(a) for a in sp.aggregates]
            rp = b.make_sharing_provider(sp.name, aggs[0], sp.inventory,
                                         sp.traits)
            for agg in aggs[1:]:
                b.add_to_aggregate(rp, agg)
            self.providers[sp.name] = rp
        for host in scn.hosts:
            node = b.create_compute_node(
                host.name, vcpus=host.vcpus, memory_mb=host.memory_mb,
                disk_gb=host.disk_gb, traits=host.traits, children=[
                    {'name': c.name, 'parent': c.parent,
                     'inventory': c.inventory, 'traits': c.traits}
                    for c in host.children])
            self.providers[host.name] = node.uuid
            self.providers.update(node.children)
            for agg in host.aggregates:
                b.add_to_aggregate(node.uuid, self._aggregate(agg))
        for server in scn.servers:
            self._place(server)
        for host in scn.hosts:
            if host.full:
                self._fill(host)
        LOG.debug('Simulated cloud %(src)s: %(p)d providers, %(s)d servers',
                  {'src': scn.source, 'p': len(self.providers),
                   's': len(self.servers)})

    def _place(self, server):
        consumer = str(uuid_lib.uuid4())
        if server.allocations is not None:
            allocs = {self.providers[name]: dict(resources)
                      for name, resources in server.allocations.items()}
        else:
            allocs = self._choose(server)
        self.builder.allocate(consumer, allocs, PROJECT, USER)
        self.servers[server.name] = consumer
        self.allocations[server.name] = allocs

    def _tree(self, host):
        return {self.providers[host.name]} | {
            self.providers[c.name] for c in host.children}

    def _sharing(self, host):
        return {self.providers[sp.name]
                for sp in self.scenario.sharing_providers
                if set(sp.aggregates) & set(host.aggregates)}

    def _choose(self, server):
        """The allocation placement offers at boot on the server's host."""
        scn = self.scenario
        host = scn.by_name('hosts')[server.host]
        flavor = scn.by_name('flavors')[server.flavor].to_flavor()
        image = scn.by_name('images')[server.image]
        query = flavor.resource_query()
        traits = nit_traits.image_traits(image.properties).required
        root = self.providers[host.name]
        tree, usable = self._tree(host), self._tree(host) | self._sharing(
            host)
        # In a tree first; placement leaves sharing providers out of
        # in_tree queries, so a host whose disk is shared needs the
        # unrestricted query, filtered to this host.
        for url in (_candidate_query(query, root, traits),
                    _candidate_query(query, image_traits=traits)):
            body = self.builder.get(url)
            for areq in body['allocation_requests']:
                allocs = areq['allocations']
                if set(allocs) <= usable and set(allocs) & tree:
                    return {rp: dict(a['resources'])
                            for rp, a in allocs.items()}
        raise nit_scenario.ScenarioError(
            scn.source, server.lines.get('host'), server.path + '.host',
            'placement has no room for flavor %s on host %s; give the '
            'server explicit allocations' % (flavor.name, host.name))

    def _fill(self, host):
        for name in [host.name] + [c.name for c in host.children]:
            rp = self.providers[name]
            inventory = self.builder.get(
                '/resource_providers/%s/inventories' % rp)['inventories']
            if 'VCPU' in inventory:
                self.builder.fill(rp, 'VCPU')

    # -- judging ---------------------------------------------------------

    def request(self, case):
        """The :class:`RebuildRequest` of a case."""
        scn = self.scenario
        server = scn.by_name('servers')[case.server]
        return nit_request.RebuildRequest(
            instance_uuid=self.servers[server.name],
            compute_node_uuid=self.providers[server.host],
            image_properties=scn.by_name('images')[case.image].properties,
            flavor=scn.by_name('flavors')[server.flavor].to_flavor(),
            original_image_properties=scn.by_name('images')[
                server.image].properties,
            host=server.host)

    def where(self, case):
        """Say where the new image's required traits sit, for the table."""
        scn = self.scenario
        server = scn.by_name('servers')[case.server]
        host = scn.by_name('hosts')[server.host]
        wanted = nit_traits.image_traits(
            scn.by_name('images')[case.image].properties)
        if wanted.invalid:
            return 'invalid name'
        forbidden = scn.by_name('flavors')[
            server.flavor].to_flavor().forbidden_traits
        allocated = self.allocations[server.name]
        cells = []
        for trait in sorted(wanted.required):
            places = ['root'] if trait in host.traits else []
            for child in host.children:
                if trait in child.traits:
                    places.append(self._named('child', child.name, host,
                                              allocated))
            for sp in scn.sharing_providers:
                if trait in sp.traits and set(sp.aggregates) & set(
                        host.aggregates):
                    places.append(self._named('sharing', sp.name, None,
                                              allocated))
            text = ', '.join(places) or 'nowhere'
            if trait in forbidden:
                text += ' (forbidden by flavor)'
            cells.append(text if len(wanted.required) == 1 else
                         '%s: %s' % (trait, text))
        return '; '.join(cells) or '-'

    def _named(self, kind, name, host, allocated):
        short = name
        if host is not None and name.startswith(host.name + '-'):
            short = name[len(host.name) + 1:]
        mark = ' (allocated)' if self.providers[name] in allocated else ''
        return '%s %s%s' % (kind, short, mark)

    # -- drawing ---------------------------------------------------------

    def panel(self, case, decisions):
        """A :class:`~nova_image_traits.cli.dot.Panel` for a case."""
        scn = self.scenario
        server = scn.by_name('servers')[case.server]
        host = scn.by_name('hosts')[server.host]
        wanted = nit_traits.image_traits(
            scn.by_name('images')[case.image].properties)
        usage = self.allocations[server.name]
        providers = []
        for rp in self._read_tree(host):
            rp.usage = usage.get(rp.uuid, {})
            providers.append(rp)
        return dot.Panel(
            title='%s: rebuild %s (on %s) with %s' % (
                case.name, server.name, host.name, case.image),
            root=self.providers[host.name], providers=providers,
            required=wanted.required,
            forbidden=scn.by_name('flavors')[
                server.flavor].to_flavor().forbidden_traits,
            invalid=tuple(prop for prop, _why in wanted.invalid),
            verdicts=[(d.strategy, d.outcome, d.fallback)
                      for d in decisions])

    def _read_tree(self, host):
        """Read a host's tree and sharing providers back from placement."""
        b, root = self.builder, self.providers[host.name]
        found = b.get('/resource_providers?in_tree=%s' % root)[
            'resource_providers']
        sharing = set(self._sharing(host))
        found += [b.get('/resource_providers/%s' % rp) for rp in sorted(
            sharing)]
        result = []
        for rp in found:
            uuid = rp['uuid']
            inv = b.get('/resource_providers/%s/inventories' % uuid)
            result.append(dot.Provider(
                uuid=uuid, name=rp['name'],
                parent=rp.get('parent_provider_uuid'),
                traits=frozenset(b.get('/resource_providers/%s/traits'
                                       % uuid)['traits']),
                inventory={rc: v['total'] for rc, v in
                           inv['inventories'].items()},
                sharing=uuid in sharing))
        return result


class Simulate(cli.CommandMixin, lister.Lister):
    """Compare every strategy on every rebuild case of a simulated cloud.

    Starts a real placement in this process, loads a scenario into it (the
    bundled sample cloud by default) and prints a compact matrix: one row
    per rebuild case, one short cell per strategy. --long, or any machine
    format (-f json, yaml, csv, value), gives one row per case and
    strategy with the reasons instead; -f dot draws each case's provider
    tree.
    """

    COLUMNS = ('Case', 'Host', 'Image', 'Traits At', 'Strategy', 'Outcome',
               'Allowed', 'Fallback', 'Missing', 'Requests', 'Reason')

    def _load_formatter_plugins(self):
        plugins = super()._load_formatter_plugins()
        formatter = dot.DotFormatter()
        return extension.ExtensionManager.make_test_instance(
            list(plugins.extensions) + [extension.Extension(
                'dot', None, dot.DotFormatter, formatter)],
            namespace=plugins.namespace)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--scenario', metavar='FILE',
            help='YAML scenario to load (default: the bundled %s)'
                 % SAMPLE)
        parser.add_argument(
            '--case', metavar='NAME', action='append', default=[],
            help='Judge only this case; may be repeated.')
        parser.add_argument(
            '--host', metavar='HOST', action='append', default=[],
            help='Only the cases whose server is on HOST; may be '
                 'repeated. Handy with -f dot.')
        parser.add_argument(
            '--matrix', action='store_true',
            help='One row per case and one column per strategy, each cell '
                 'the outcome (and the fallback strategy that decided it, '
                 'if one did). The strategy table of the documentation is '
                 'this output for the bundled cloud, with -f csv.')
        parser.add_argument(
            '--long', action='store_true',
            help='One row per case and strategy, with the reason, the '
                 'fallback, the missing traits and the placement requests. '
                 'The default for every format but table.')
        cli.add_strategy_options(parser, 'all')
        cli.add_config_option(parser)
        return parser

    @staticmethod
    def _compact(parsed_args):
        return (parsed_args.formatter == 'table' and not parsed_args.long
                and not parsed_args.matrix)

    def produce_output(self, parsed_args, column_names, data):
        result = super().produce_output(parsed_args, column_names, data)
        if self._compact(parsed_args):
            for line in compact.legend(*self._legend):
                self.app.stdout.write(line + '\n')
        return result

    def _cases(self, scn, parsed_args):
        cases = scn.cases
        if parsed_args.case:
            known = scn.by_name('cases')
            unknown = [c for c in parsed_args.case if c not in known]
            if unknown:
                raise cli.UsageError('unknown case(s) %s; the scenario has: '
                                     '%s' % (', '.join(unknown),
                                             ', '.join(known)))
            cases = [c for c in cases if c.name in parsed_args.case]
        if parsed_args.host:
            servers = scn.by_name('servers')
            cases = [c for c in cases
                     if servers[c.server].host in parsed_args.host]
        if not cases:
            raise cli.UsageError('no case matches --case/--host')
        return cases

    def take_action(self, parsed_args):
        conf = cli.load_conf(parsed_args.config_file)
        names = cli.selected_strategies(parsed_args, conf, default_all=True)
        path = parsed_args.scenario or default_scenario_path()
        scn = nit_scenario.load(path)
        cases = self._cases(scn, parsed_args)
        drawing = parsed_args.formatter == 'dot'
        short = self._compact(parsed_args)
        rows, panels, everything = [], [], []
        with SimulatedCloud(scn) as cloud:
            client = cloud.client()
            for case in cases:
                request = cloud.request(case)
                decisions = [cli.decide(request, conf, client, name,
                                        parsed_args.fallback_strategy)
                             for name in names]
                if drawing:
                    panels.append(cloud.panel(case, decisions))
                    continue
                where = cloud.where(case)
                if short:
                    everything.extend(decisions)
                    rows.append(compact.row(case.name, where, decisions))
                    continue
                if parsed_args.matrix:
                    rows.append((case.name, where) + tuple(
                        '%s (%s)' % (d.outcome, d.fallback) if d.fallback
                        else d.outcome for d in decisions))
                    continue
                for d in decisions:
                    rows.append((case.name, request.host, case.image, where,
                                 d.strategy, d.outcome, d.allowed,
                                 d.fallback or '-', cli.join(d.missing),
                                 d.requests, cli.short_reason(d)))
        if drawing:
            return ('DOT',), [(dot.render(panels),)]
        if short:
            self._legend = (names, everything)
            return compact.columns(names), rows
        if parsed_args.matrix:
            return ('Case', 'Traits At') + tuple(names), rows
        return self.COLUMNS, rows
