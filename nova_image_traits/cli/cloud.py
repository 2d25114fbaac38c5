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
"""Read a real cloud for ``check`` and the audits, through openstacksdk.

:class:`Cloud` reads, as an administrator: servers (their host and
hypervisor node; compute API microversion 2.47 or later embeds the flavor
with its extra specs), compute node resource providers
(``GET /resource_providers?name=<hypervisor hostname>``) and image
properties. Nothing is changed.

Image properties are read by :class:`~nova_image_traits.images.ImageSource`;
what nova derives from them is added by
:class:`~nova_image_traits.cli.derive.Deriver` where nova is importable.

The placement client is built on first use, so that a decision that needs
no placement works while placement is down, and an outage is reported in
one line naming the service, its URL and the error.
"""

import dataclasses

from nova_image_traits import cli
from nova_image_traits.cli import derive
from nova_image_traits.cli import isolation as cli_isolation
from nova_image_traits import exception
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import images as nit_images
from nova_image_traits import placement
from nova_image_traits import request as nit_request
from nova_image_traits import traits as nit_traits

LookupFailed = nit_images.LookupFailed
ImageNotFound = nit_images.ImageNotFound
ServiceUnavailable = nit_images.ServiceUnavailable


def image_id(server):
    """The current image of an SDK server; None when it boots from a volume."""
    return getattr(server.image, 'id', None) or None


def add_cloud_options(parser, argv):
    """Add openstacksdk's ``--os-cloud`` and ``--os-*`` options.

    :param argv: the command line, which openstacksdk peeks at to choose
        the auth plugin whose options it adds
    """
    import openstack.config
    openstack.config.OpenStackConfig().register_argparse_arguments(
        parser, list(argv))
    parser.add_argument(
        '--image-source', choices=nit_images.SOURCES,
        default='auto',
        help='Where to read image properties: the image service, or '
             "nova's image proxy API (compute microversion 2.35). auto "
             'uses the image service when the catalog has one.')


def connect(app, parsed_args):
    """Return the application's connection, or one from the options."""
    if app.connection is not None:
        return app.connection
    import openstack.config
    import openstack.connection
    # The cloud may be named before the command.
    parsed_args.os_cloud = parsed_args.os_cloud or app.options.os_cloud
    region = openstack.config.OpenStackConfig().get_one(argparse=parsed_args)
    return openstack.connection.Connection(config=region,
                                           app_name='nova-image-traits')


def add_command_options(parser, argv):
    """Add the options ``check`` and ``audit`` share.

    The strategy, the configuration files and the cloud.
    """
    cli.add_strategy_options(parser, 'the configured [image_traits] strategy')
    cli.add_config_option(parser, search=True)
    add_cloud_options(parser, argv)


def open_cloud(command, app, parsed_args):
    """Load the configuration and connect, as ``check`` and ``audit`` do.

    :returns: ``(conf, strategy names, Cloud)``
    """
    conf = cli.load_conf(parsed_args.config_file, parsed_args.config_dir,
                         search=True)
    if parsed_args.fallback_strategy:
        conf.set_override('fallback_strategy', parsed_args.fallback_strategy,
                          'image_traits')
    names = cli.selected_strategies(parsed_args, conf)
    app.stderr.write('%s: %s\n' % (command, cli.describe_conf(conf)))
    cloud = Cloud(connect(app, parsed_args), conf, parsed_args.image_source)
    note_derived(command, app, cloud.deriver)
    return conf, names, cloud


def note_derived(command, app, deriver):
    """Say on stderr, in one line, when nova's derivations are not judged."""
    note = deriver.note()
    if note:
        app.stderr.write('%s: %s\n' % (command, note))


class LazyClient:
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


class Cloud:
    """Read servers, flavors, images and compute node providers.

    Image properties and node providers are cached, so each is read once.

    :param conn: an ``openstack.connection.Connection`` with admin rights
    :param conf: the ConfigOpts holding ``[image_traits]``
    :param source: one of
        :data:`~nova_image_traits.images.SOURCES`
    """

    def __init__(self, conn, conf, source='auto'):
        self.conn = conn
        #: Built on first use, so that a decision that needs no placement
        #: (no traits, invalid names) works while placement is down.
        self.client = LazyClient(self._placement_client)
        self._conf = conf
        self.images = nit_images.ImageSource(conn, source)
        #: What nova derives from images, when nova is importable.
        self.deriver = derive.Deriver(conf)
        #: nova's aggregates, when isolation is on in nova.conf.
        self.aggregates = (cli_isolation.Aggregates(conn)
                           if cli_isolation.enabled(conf) else None)
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
                # NOTE(founders): the catalog's URL, without version discovery.
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
        # Nova matches host and binary exactly.
        if not list(self.conn.compute.services(binary='nova-compute',
                                               host=host)):
            raise LookupFailed('No nova-compute service on host %s' % host)

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
        return nit_images.remember(self._nodes, node, self._lookup_node)

    def session(self):
        """A placement session, bounded as a decision's is."""
        opts = self._conf.image_traits
        return self.client.start(opts.decision_timeout, opts.max_url_length)

    def _lookup_node(self, node):
        try:
            body = self.session().get('/resource_providers',
                                      [('name', node)], version='1.14')
        except exception.PlacementError as e:
            raise LookupFailed('Cannot read the resource provider of node '
                               '%s: %s' % (node, e.message))
        found = body.get('resource_providers') or []
        if len(found) != 1 or not isinstance(found[0], dict):
            raise LookupFailed('Placement has no resource provider named '
                               '%s' % node)
        return str(found[0].get('uuid'))

    def request(self, server, image_props, original_props, lookup=None):
        """The :class:`RebuildRequest` of an SDK server and an image.

        With what nova derives from the new image when nova is importable
        (:class:`~nova_image_traits.cli.derive.Deriver`).

        :param lookup: whether to look up the node's provider; by default
            only when the image asks for something placement can judge:
            valid ``trait:`` properties, or derived requirements
        """
        request = self.deriver.request(nit_request.RebuildRequest(
            instance_uuid=server.id, compute_node_uuid=None,
            image_properties=image_props, flavor=self.flavor(server),
            original_image_properties=original_props,
            is_volume_backed=image_id(server) is None,
            host=server.compute_host))
        if self.aggregates is not None:
            request = dataclasses.replace(
                request,
                forbidden_aggregates=self.aggregates.forbidden(request))
        if lookup is None:
            wanted = nit_traits.image_traits(image_props)
            lookup = not wanted.invalid and bool(
                wanted.required or request.derived or
                request.forbidden_aggregates)
        if not lookup:
            return request
        return dataclasses.replace(
            request, compute_node_uuid=self.node_provider(
                server.hypervisor_hostname))
