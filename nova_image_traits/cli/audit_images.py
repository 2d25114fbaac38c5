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
"""``nova-image-traits audit images``: which images can boot anywhere?

Cost. The images are listed once (paginated) and nova's compute nodes
once (``GET /os-hypervisors``, paginated). Placement then gets one
``GET /traits?name=in:...`` for the traits of every image together, and
one ``GET /resource_providers?required=...`` per image whose traits are
all valid and known. The number of placement requests grows with the
images, not with hosts times images.
"""

from cliff import lister
from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits.cli import cloud as nit_cloud
from nova_image_traits import exception
from nova_image_traits import images as nit_images
from nova_image_traits import placement

LOG = logging.getLogger(__name__)

#: Microversion of ``GET /resource_providers?required=`` with roots shown.
PROVIDERS_VERSION = '1.18'
#: Seconds the whole audit may wait for placement.
TIMEOUT = 300.0
#: The exit code when some image no host can boot.
NO_HOST = 1


class AuditImages(cli.CommandMixin, lister.Lister):
    """List images with trait: properties, and how many hosts can boot them.

    For every image with trait: properties (or each IMAGE given): the
    traits it requires, those that are not valid trait names, those
    placement does not know, and Hosts: how many compute nodes have every
    required trait on their own resource provider, the root of the node's
    provider tree. That is the rule the default strategy, held_providers,
    applies at boot to a flavor whose unsuffixed resources (VCPU,
    MEMORY_MB, DISK_GB) come from the root. Traits on child providers
    (GPUs, NICs, NUMA cells) and on sharing providers are not counted, nor
    are free capacity, disabled services or host aggregates. Bootable is
    "no" when no compute node qualifies. Exits with 1 when any listed image
    is not bootable, 2 on bad input or when the cloud cannot be read.
    """

    COLUMNS = ('ID', 'Name', 'Status', 'Required', 'Invalid', 'Unknown',
               'Hosts', 'Bootable')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'image', metavar='IMAGE', nargs='*',
            help='Image name or ID; default: every image with trait: '
                 'properties')
        cli.add_config_option(parser)
        nit_cloud.add_cloud_options(parser, self.app.argv)
        return parser

    def take_action(self, parsed_args):
        conf = cli.load_conf(parsed_args.config_file)
        conn = nit_cloud.connect(self.app, parsed_args)
        try:
            found = nit_images.list_images(conn, parsed_args.image_source)
        except nit_images.ImagesUnavailable as e:
            raise cli.UsageError(str(e))
        chosen = nit_images.with_traits(found, parsed_args.image)
        missing = set(parsed_args.image) - {i.id for i in chosen} - {
            i.name for i in chosen}
        if missing:
            raise cli.UsageError('no image with name or ID %s' % ', '.join(
                sorted(missing)))
        try:
            # The hypervisor hostnames, which name the nodes' providers.
            nodes = {h.name for h in conn.compute.hypervisors()}
        except Exception as e:
            raise cli.UsageError('cannot list compute nodes (GET '
                                 '/os-hypervisors, needs an administrator)'
                                 ': %s: %s' % (type(e).__name__, e))
        client = placement.PlacementClient(conn.placement)
        session = client.start(TIMEOUT, conf.image_traits.max_url_length)
        wanted = set().union(*(i.traits.required for i in chosen))
        try:
            known = nit_images.known_traits(session, wanted)
            rows = [self._row(session, image, known, nodes)
                    for image in chosen]
        except exception.PlacementError as e:
            raise cli.UsageError('placement: %s' % e.message)
        unbootable = len([row for row in rows if row[-1] == 'no'])
        self.app.stderr.write(
            'audit images: %d images, %d not bootable; %d compute nodes; '
            '%d placement requests\n' % (len(rows), unbootable, len(nodes),
                                         session.requests))
        self.exit_status = NO_HOST if unbootable else 0
        return self.COLUMNS, rows

    @classmethod
    def _row(cls, session, image, known, nodes):
        required = image.traits.required
        unknown = required - known
        invalid = [prop for prop, _why in image.traits.invalid]
        if invalid or unknown:
            hosts = 0
        elif not required:
            hosts = len(nodes)
        else:
            hosts = cls._count_roots(session, required, nodes)
        return (image.id, image.name or '-', image.status or '-',
                cli.join(required), cli.join(invalid), cli.join(unknown),
                hosts, 'yes' if hosts else 'no')

    @staticmethod
    def _count_roots(session, required, nodes):
        body = session.get('/resource_providers',
                           [('required', ','.join(sorted(required)))],
                           version=PROVIDERS_VERSION)
        found = placement.require(body.get('resource_providers'), list,
                                  '/resource_providers', 'resource_providers')
        return len({rp.get('uuid') for rp in found
                    if isinstance(rp, dict) and
                    rp.get('uuid') == rp.get('root_provider_uuid') and
                    rp.get('name') in nodes})
