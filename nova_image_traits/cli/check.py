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
"""``nova-image-traits check``: judge one rebuild on a real cloud.

It reads, through openstacksdk and as an administrator: the server (its
host and hypervisor node, compute API microversion 2.47 or later embeds its
flavor with the extra specs), the compute node's resource provider
(``GET /resource_providers?name=<hypervisor hostname>``), and the
properties of the new and the current image. It then runs the decision
engine against the cloud's placement. Nothing is changed.

Image properties come from the image service when the catalog has one;
otherwise from nova's image proxy API (``GET /images/{id}`` at compute
microversion 2.35, the last one that has it), which returns the same
properties as ``metadata``.
"""

import collections
import urllib.parse

from cliff import lister
from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits import decision as nit_decision
from nova_image_traits import exception
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import placement
from nova_image_traits import request as nit_request
from nova_image_traits import traits as nit_traits

LOG = logging.getLogger(__name__)

#: The last compute API microversion with the image proxy API.
IMAGE_PROXY_VERSION = '2.35'
IMAGE_SOURCES = ('auto', 'image', 'compute')


class LookupFailed(Exception):
    """Something the command needs could not be read from the cloud."""


class ImageNotFound(LookupFailed):
    """The image service answered: there is no such image."""


class ServiceUnavailable(LookupFailed):
    """A service did not answer; every further request would fail too."""


Target = collections.namedtuple('Target', [
    'server_id', 'name', 'host', 'node', 'flavor', 'image_id',
    'volume_backed'])
Target.__doc__ = """A server as the commands see it: where and what it is.

:ivar host: the compute service host, None when the server has none
:ivar node: the hypervisor hostname, which names the node's provider
:ivar flavor: the :class:`~nova_image_traits.flavor.Flavor`
:ivar image_id: the current image, None for a volume-backed server
"""


def add_cloud_options(parser, argv):
    """Add openstacksdk's ``--os-cloud`` and ``--os-*`` options.

    :param argv: the command line, which openstacksdk peeks at to choose
        the auth plugin whose options it adds
    """
    import openstack.config
    openstack.config.OpenStackConfig().register_argparse_arguments(
        parser, list(argv))
    parser.add_argument(
        '--image-source', choices=IMAGE_SOURCES, default='auto',
        help='Where to read image properties: the image service, or '
             "nova's image proxy API (compute microversion 2.35). auto "
             'uses the image service when the catalog has one.')


def connect(app, parsed_args):
    """Return the application's connection, or one from the options."""
    if app.connection is not None:
        return app.connection
    import openstack.config
    import openstack.connection
    before = getattr(app.options, 'os_cloud', None)
    if before and not getattr(parsed_args, 'os_cloud', None):
        # The cloud was named before the command.
        parsed_args.os_cloud = before
    region = openstack.config.OpenStackConfig().get_one(argparse=parsed_args)
    return openstack.connection.Connection(config=region,
                                           app_name='nova-image-traits')


def _check_image_api(resp, name_or_id, found=True):
    """Raise :class:`ServiceUnavailable` unless ``resp`` is a 404.

    :param found: whether a 404 is acceptable (a name, not an ID)
    """
    if found and resp.status_code == 404:
        return
    raise ServiceUnavailable(
        "Nova's image API (GET %s, compute microversion %s) answered HTTP "
        '%s for image %s: the image service may be down' % (
            urllib.parse.urlsplit(resp.request.url).path,
            IMAGE_PROXY_VERSION, resp.status_code, name_or_id))


class LazyClient(object):
    """A placement client built the first time it is used.

    :param factory: returns the real client
    """

    def __init__(self, factory):
        self._factory = factory
        self._client = None

    def __getattr__(self, name):
        if self._client is None:
            self._client = self._factory()
        return getattr(self._client, name)


class Cloud(object):
    """Read servers, flavors, images and compute node providers.

    Image properties and node providers are cached, so each is read once.

    :param conn: an ``openstack.connection.Connection`` with admin rights
    :param conf: the ConfigOpts holding ``[image_traits]``
    :param image_source: one of :data:`IMAGE_SOURCES`
    """

    def __init__(self, conn, conf, image_source='auto'):
        self.conn = conn
        #: Built on first use, so that a decision that needs no placement
        #: (no traits, invalid names) works while placement is down.
        self.client = LazyClient(self._placement_client)
        self._conf = conf
        if image_source == 'auto':
            image_source = 'image' if conn.has_service('image') else (
                'compute')
        self.image_source = image_source
        self._images = {}
        self._nodes = {}

    def _placement_client(self):
        """A placement client, or one line naming placement and the error.

        :raises ServiceUnavailable: when openstacksdk cannot reach
            placement; its own message ("... exists but does not have any
            supported versions") hides the cause, so the endpoint is asked
            again
        """
        try:
            return placement.PlacementClient(self.conn.placement)
        except Exception as e:
            try:
                # NOTE: the catalog's URL, without version discovery.
                url = self.conn.session.get_endpoint(
                    service_type='placement',
                    interface=self.conn.config.get_interface('placement'))
            except Exception:
                url = None
            why = '%s: %s' % (type(e).__name__, e)
            if url:
                try:
                    resp = self.conn.session.get(url, raise_exc=False)
                    if resp.status_code != 200:
                        why = 'HTTP %s from GET %s' % (resp.status_code,
                                                       url)
                except Exception as probe:
                    why = '%s: %s' % (type(probe).__name__, probe)
            raise ServiceUnavailable('Placement is unreachable at %s: %s' % (
                url or '(no endpoint in the catalog)', why))

    def find_server(self, name_or_id):
        """Return the SDK server ``name_or_id``, in any project."""
        server = self.conn.compute.find_server(
            name_or_id, ignore_missing=True, all_projects=True)
        if server is None:
            raise LookupFailed('No server with name or ID %s' % name_or_id)
        return server

    def servers(self, host=None):
        """Every server the caller can see, on ``host`` if given."""
        query = {'compute_host': host} if host else {}
        for server in self.conn.compute.servers(
                details=True, all_projects=True, **query):
            if host is None or server.compute_host == host:
                yield server

    def check_host(self, host):
        """Raise :class:`LookupFailed` unless ``host`` runs nova-compute."""
        services = list(self.conn.compute.services(binary='nova-compute',
                                                   host=host))
        if not [s for s in services if s.host == host]:
            raise LookupFailed('No nova-compute service on host %s' % host)

    def target(self, server):
        """Return the :class:`Target` of an SDK server."""
        image = getattr(server.image, 'id', None) or None
        return Target(server_id=server.id, name=server.name,
                      host=server.compute_host,
                      node=server.hypervisor_hostname,
                      flavor=self.flavor(server), image_id=image,
                      volume_backed=image is None)

    def flavor(self, server):
        """The server's flavor, embedded since compute API 2.47."""
        fl = server.flavor
        if fl is None or getattr(fl, 'vcpus', None) is None:
            fl = self.conn.compute.get_flavor(getattr(fl, 'id', fl),
                                              get_extra_specs=True)
        return nit_flavor.Flavor(
            vcpus=int(fl.vcpus or 0), memory_mb=int(fl.ram or 0),
            root_gb=int(fl.disk or 0), ephemeral_gb=int(fl.ephemeral or 0),
            swap=int(fl.swap or 0), extra_specs=dict(fl.extra_specs or {}),
            name=getattr(fl, 'original_name', None) or fl.name)

    def node_provider(self, node):
        """The UUID of the resource provider named ``node``.

        Cached, failures included, so that a node costs one request however
        many servers it has.

        :raises LookupFailed: when placement has no such provider
        """
        if node not in self._nodes:
            self._nodes[node] = self._lookup_node(node)
        found = self._nodes[node]
        if isinstance(found, LookupFailed):
            raise found
        return found

    def _lookup_node(self, node):
        opts = self._conf.image_traits
        session = self.client.start(opts.decision_timeout,
                                    opts.max_url_length)
        try:
            body = session.get('/resource_providers', [('name', node)],
                               version='1.14')
        except exception.PlacementError as e:
            return LookupFailed('Cannot read the resource provider of node '
                                '%s: %s' % (node, e.message))
        found = body.get('resource_providers') or []
        if len(found) != 1 or not isinstance(found[0], dict):
            return LookupFailed('Placement has no resource provider named '
                                '%s' % node)
        return str(found[0].get('uuid'))

    def image(self, name_or_id):
        """Return ``(id, properties)`` of an image; cached."""
        if name_or_id not in self._images:
            try:
                if self.image_source == 'image':
                    found = self._from_image_service(name_or_id)
                else:
                    found = self._from_compute(name_or_id)
            except ImageNotFound as e:
                # Cached: a deleted image costs one lookup per audit.
                self._images[name_or_id] = e
                raise
            self._images[name_or_id] = self._images[found[0]] = found
        found = self._images[name_or_id]
        if isinstance(found, LookupFailed):
            raise found
        return found

    def _from_image_service(self, name_or_id):
        try:
            image = self.conn.image.find_image(name_or_id,
                                               ignore_missing=True)
        except Exception as e:
            raise ServiceUnavailable(
                'The image service did not answer for image %s: %s: %s' % (
                    name_or_id, type(e).__name__, e))
        if image is None:
            raise ImageNotFound('No image with name or ID %s' % name_or_id)
        return image.id, dict(image.properties or {})

    def _from_compute(self, name_or_id):
        compute = self.conn.compute
        resp = compute.get('/images/%s' % urllib.parse.quote(
            name_or_id, safe=''), microversion=IMAGE_PROXY_VERSION,
            raise_exc=False)
        if resp.status_code == 200:
            image = resp.json()['image']
        else:
            _check_image_api(resp, name_or_id)
            resp = compute.get('/images/detail?' + urllib.parse.urlencode(
                {'name': name_or_id}), microversion=IMAGE_PROXY_VERSION,
                raise_exc=False)
            if resp.status_code != 200:
                _check_image_api(resp, name_or_id, found=False)
            images = resp.json().get('images', [])
            # NOTE: filter again: not every image backend honours ?name=.
            images = [i for i in images if i.get('name') == name_or_id]
            if len(images) > 1:
                raise LookupFailed('More than one image with name %s '
                                   "(nova's image API)" % name_or_id)
            if not images:
                raise ImageNotFound('No image with name or ID %s (nova\'s '
                                    'image API)' % name_or_id)
            image = images[0]
        return image['id'], dict(image.get('metadata') or {})

    def request(self, target, image_props, original_props, image_id,
                lookup=True):
        """The :class:`RebuildRequest` for ``target`` and an image.

        :param lookup: whether to look up the node's provider; a request
            for an image that requires no valid trait needs none
        """
        return nit_request.RebuildRequest(
            instance_uuid=target.server_id,
            compute_node_uuid=self.node_provider(target.node) if lookup
            else None,
            image_properties=image_props, flavor=target.flavor,
            original_image_properties=original_props,
            is_volume_backed=target.volume_backed, host=target.host,
            image_id=image_id)


#: Exit codes of ``check``.
EXIT_ACCEPT = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REFUSE = 3
#: The outcome shown for a rebuild with the server's current image.
NOT_CHECKED = 'not checked'


class Check(cli.CommandMixin, lister.Lister):
    """Show the decisions a rebuild of SERVER with IMAGE would get.

    Reads the server, its flavor, its compute node's provider and both
    images, then runs each strategy against the cloud's placement. Nothing
    is rebuilt or changed. Needs an administrator. A rebuild with the
    server's current image is not checked, as nova checks nothing then.
    Exit codes: 0 every strategy shown accepts (or the image is the
    current one), 3 at least one refuses, 1 the cloud could not be read
    or a decision ended in an error, 2 bad input.
    """

    COLUMNS = ('Strategy', 'Outcome', 'Allowed', 'Fallback', 'Required',
               'Missing', 'Requests', 'Cause', 'Detail', 'Reason')

    def run(self, parsed_args):
        self.refused = self.errors = 0
        result = super().run(parsed_args)
        if result == 0 and self.errors:
            return EXIT_ERROR
        if result == 0 and self.refused:
            return EXIT_REFUSE
        return result

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='SERVER',
                            help='Server name or ID')
        parser.add_argument('--image', metavar='IMAGE', required=True,
                            help='The new image, name or ID')
        cli.add_strategy_options(
            parser, 'the configured [image_traits] strategy')
        cli.add_config_option(parser, search=True)
        add_cloud_options(parser, self.app.argv)
        return parser

    def take_action(self, parsed_args):
        conf = cli.load_conf(parsed_args.config_file,
                             parsed_args.config_dir, search=True)
        if parsed_args.fallback_strategy:
            conf.set_override('fallback_strategy',
                              parsed_args.fallback_strategy, 'image_traits')
        names = cli.selected_strategies(parsed_args, conf)
        self.app.stderr.write('check: %s\n' % cli.describe_conf(conf))
        cloud = Cloud(connect(self.app, parsed_args), conf,
                      parsed_args.image_source)
        target = cloud.target(cloud.find_server(parsed_args.server))
        if not target.host or not target.node:
            raise LookupFailed(
                'Server %s has no host or hypervisor hostname: it is not on '
                'a host, or the caller is not an administrator'
                % target.server_id)
        image_id, props = cloud.image(parsed_args.image)
        if image_id == target.image_id:
            # NOTE: nova's conductor checks image traits only when the
            # image changes (orig_image_ref != image_ref).
            reason = ('not checked: same image (a rebuild with the '
                      "server's current image is not checked by nova)")
            return self.COLUMNS, [
                (name, NOT_CHECKED, True, '-', '-', '-', 0, 'same-image',
                 '-', reason) for name in names]
        original = None
        if target.image_id:
            try:
                original = cloud.image(target.image_id)[1]
            except LookupFailed as e:
                # The reject strategy then judges by the flavor alone.
                LOG.warning('Cannot read the current image of server '
                            '%(s)s: %(e)s', {'s': target.server_id, 'e': e})
        wanted = nit_traits.image_traits(props)
        request = cloud.request(target, props, original, image_id,
                                lookup=bool(wanted.required and
                                            not wanted.invalid))
        LOG.info('Checking a rebuild of server %(s)s on %(h)s (node %(n)s, '
                 'provider %(rp)s) with image %(i)s',
                 {'s': target.server_id, 'h': target.host, 'n': target.node,
                  'rp': request.compute_node_uuid, 'i': image_id})
        rows = []
        for name in names:
            d = cli.decide(request, conf, cloud.client, name,
                           parsed_args.fallback_strategy)
            if d.outcome == nit_decision.ERROR:
                self.errors += 1
            elif not d.allowed:
                self.refused += 1
            rows.append((d.strategy, d.outcome, d.allowed, d.fallback or '-',
                         cli.join(d.required), cli.join(d.missing),
                         d.requests, d.cause or '-', d.detail or '-',
                         d.user_reason()))
        return self.COLUMNS, rows
