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
all valid and known, and one more for an image from which nova derives
traits too. The number of placement requests grows with the images, not
with hosts times images. What nova derives is computed in this process,
with nova's code (:mod:`nova_image_traits.cli.derive`).

``--same-image-rebuilds`` judges servers instead
(:mod:`nova_image_traits.cli.same_image`).
"""

from cliff import lister
from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits.cli import cloud as nit_cloud
from nova_image_traits.cli import derive
from nova_image_traits.cli import same_image
from nova_image_traits import exception
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import images as nit_images
from nova_image_traits import placement

LOG = logging.getLogger(__name__)

#: Microversion of ``GET /resource_providers?required=`` with roots shown.
PROVIDERS_VERSION = '1.18'
#: ... and with forbidden traits (``required=!NAME``).
FORBIDDEN_VERSION = '1.22'
#: The flavor an image is judged with: what the image adds to a boot of
#: the smallest flavor, with no extra specs.
FLAVOR = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                           name='audit-images')
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
    "no" when no compute node qualifies. Where nova is importable, the
    images from which nova derives requirements (vTPM, secure boot, bus
    and model prefilters...) are listed too: Derived names them and their
    properties, and Derived Hosts counts the compute nodes that also meet
    the derived traits on their own provider (resources such as
    MEM_ENCRYPTION_CONTEXT are listed, not counted); Bootable then follows
    Derived Hosts. Exits with 1 when any listed image is not bootable, 2
    on bad input or when the cloud cannot be read.

    With --same-image-rebuilds, lists instead the servers of these images
    that [image_traits] judge_same_image_rebuild would have the pre-check
    refuse on a rebuild with their own image: those whose image was
    updated after they last recorded its properties (their last create or
    rebuild) and whose host the configured strategy refuses for the
    image's current properties. An upper bound: any update of the image
    counts, nova's API shows no system metadata to compare. Exits with 1
    when any would be refused or cannot be judged.
    """

    COLUMNS = ('ID', 'Name', 'Status', 'Required', 'Invalid', 'Unknown',
               'Hosts', 'Derived', 'Derived Hosts', 'Bootable')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'image', metavar='IMAGE', nargs='*',
            help='Image name or ID; default: every image with trait: '
                 'properties')
        parser.add_argument(
            '--same-image-rebuilds', action='store_true',
            help='List the servers of these images whose rebuild with '
                 'their own image the pre-check would refuse '
                 '([image_traits] judge_same_image_rebuild)')
        cli.add_config_option(parser)
        nit_cloud.add_cloud_options(parser, self.app.argv)
        return parser

    def take_action(self, parsed_args):
        conf = cli.load_conf(parsed_args.config_file)
        deriver = derive.Deriver(conf)
        nit_cloud.note_derived('audit images', self.app, deriver)
        judge = (deriver.available and
                 conf.image_traits.judge_derived_requirements)
        conn = nit_cloud.connect(self.app, parsed_args)
        try:
            found = nit_images.list_images(conn, parsed_args.image_source)
        except nit_images.ImagesUnavailable as e:
            raise cli.UsageError(str(e))
        derived = {}

        def asks(image):
            if image.id not in derived:
                derived[image.id] = deriver.image_request(
                    image.properties, FLAVOR).derived
            return bool(derived[image.id])

        chosen = nit_images.with_traits(found, parsed_args.image,
                                        asks if judge else None)
        if judge:
            for image in chosen:
                asks(image)
        missing = set(parsed_args.image) - {i.id for i in chosen} - {
            i.name for i in chosen}
        if missing:
            raise cli.UsageError('no image with name or ID %s' % ', '.join(
                sorted(missing)))
        if parsed_args.same_image_rebuilds:
            return self._same_image(conn, conf, chosen,
                                    parsed_args.image_source)
        try:
            # The hypervisor hostnames, which name the nodes' providers.
            nodes = {h.name for h in conn.compute.hypervisors()}
        except Exception as e:
            raise cli.UsageError('cannot list compute nodes (GET '
                                 '/os-hypervisors, needs an administrator)'
                                 ': %s: %s' % (type(e).__name__, e))
        client = placement.PlacementClient(conn.placement)
        session = client.start(TIMEOUT, conf.image_traits.max_url_length)
        wanted = set().union(*(i.traits.required for i in chosen)) | {
            r.trait for d in derived.values() if d for r in d.traits}
        # What each image's Derived cell says when it is not judged.
        state = ('unknown' if not deriver.available else
                 None if judge else 'off')
        try:
            known = nit_images.known_traits(session, wanted)
            rows = [self._row(session, image, known, nodes,
                              derived.get(image.id), state)
                    for image in chosen]
        except exception.PlacementError as e:
            raise cli.UsageError('placement: %s' % e.message)
        unbootable = [row for row in rows if row[-1] == 'no']
        only = [row for row in unbootable if row[6]]
        self.app.stderr.write(
            'audit images: %d images, %d not bootable, %d of them only '
            'because of derived requirements; %d compute nodes; %d '
            'placement requests\n' % (len(rows), len(unbootable),
                                      len(only), len(nodes),
                                      session.requests))
        self.exit_status = NO_HOST if unbootable else 0
        return self.COLUMNS, rows

    def _same_image(self, conn, conf, images, source):
        preview = same_image.Preview(conn, conf, source)
        try:
            rows = preview.rows(images)
        except (exception.PlacementError, nit_cloud.LookupFailed) as e:
            raise cli.UsageError(getattr(e, 'message', None) or str(e))
        self.app.stderr.write(preview.summary(images))
        self.exit_status = NO_HOST if rows else 0
        return same_image.COLUMNS, rows

    @classmethod
    def _row(cls, session, image, known, nodes, derived, state):
        """An image's row.

        :param derived: the image's derived requirements, or None
        :param state: the Derived cell when they are not judged (off,
            unknown), else None
        """
        required = image.traits.required
        unknown = required - known
        invalid = [prop for prop, _why in image.traits.invalid]
        if invalid or unknown:
            hosts = 0
        elif not required:
            hosts = len(nodes)
        else:
            hosts = cls._count_roots(session, required, (), nodes)
        if state or derived is None:
            cell, with_derived = state or 'unknown', '-'
        elif not derived:
            cell, with_derived = '-', hosts
        else:
            cell = derive.requirements_text(derived.traits,
                                            derived.resources)
            needed = {r.trait for r in derived.traits if not r.forbidden}
            forbidden = {r.trait for r in derived.traits
                         if r.forbidden} & known
            if derived.refusal:
                cell = 'refused: %s' % derived.refusal
            if derived.refusal or not hosts or (needed - known):
                with_derived = 0
            elif not needed and not forbidden:
                # Resources alone, which are not counted.
                with_derived = hosts
            else:
                with_derived = cls._count_roots(
                    session, required | needed, forbidden, nodes)
        bootable = with_derived if with_derived != '-' else hosts
        return (image.id, image.name or '-', image.status or '-',
                cli.join(required), cli.join(invalid), cli.join(unknown),
                hosts, cell, with_derived, 'yes' if bootable else 'no')

    @staticmethod
    def _count_roots(session, required, forbidden, nodes):
        names = sorted(required) + ['!' + n for n in sorted(forbidden)]
        body = session.get('/resource_providers',
                           [('required', ','.join(names))],
                           version=FORBIDDEN_VERSION if forbidden
                           else PROVIDERS_VERSION)
        found = placement.require(body.get('resource_providers'), list,
                                  '/resource_providers', 'resource_providers')
        return len({rp.get('uuid') for rp in found
                    if isinstance(rp, dict) and
                    rp.get('uuid') == rp.get('root_provider_uuid') and
                    rp.get('name') in nodes})
