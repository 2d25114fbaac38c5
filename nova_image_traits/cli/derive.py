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
"""What nova derives from an image, for the command-line tools.

Inside nova, :func:`nova_image_traits.nova_request.rebuild_request` puts
on a rebuild request what a boot of the new image would ask beyond its
``trait:`` properties (vTPM, secure boot, memory encryption, CPU thread
policy, the request filters' bus, model and image type traits), built by
:mod:`nova_image_traits.boot_requirements` with nova's own code. The
commands run where nova may not be installed. :class:`Deriver` does the
same when nova is importable, and says plainly when it is not; it is the
only module of the command line that imports nova, and only when asked.

Nova's image request filters read two ``[scheduler]`` options from
nova's global configuration. The commands read nova.conf (``--config-file``
and ``--config-dir``) into their own ConfigOpts; :class:`Deriver`
registers those two options there, so that their values come from the
same files, and sets them on nova's ``CONF`` for each derivation only.
A scenario of the simulator may set them per case.
"""

import dataclasses
import functools
import importlib
import warnings

from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits import request as nit_request
from nova_image_traits import requirements as nit_requirements
from nova_image_traits import traits as nit_traits

LOG = logging.getLogger(__name__)

#: nova's ``[scheduler]`` options that its image request filters read.
SCHEDULER_OPTS = ('image_metadata_prefilter',
                  'query_placement_for_image_type_support')

#: What is not judged without nova, for the one line the commands print.
NOT_JUDGED = ('nova is not importable here (%s): what nova derives from '
              'image properties (vTPM, secure boot, memory encryption, CPU '
              'thread policy, bus and model prefilters, image type) was not '
              'judged; the decisions show derived=unknown')

#: Glance's own attributes of an image that nova's ``ImageMeta`` reads.
IMAGE_FIELDS = ('disk_format', 'container_format', 'min_ram', 'min_disk',
                'size')
#: Glance's attributes that are not image properties.
GLANCE_CORE = frozenset(IMAGE_FIELDS + (
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'virtual_size',
    'created_at', 'updated_at', 'tags', 'file', 'schema', 'self',
    'locations', 'direct_url', 'stores', 'properties'))

#: A placeholder consumer for the request spec of an image alone.
_NO_SERVER = '00000000-0000-0000-0000-000000000000'


def _boot_requirements():
    """``nova_image_traits.boot_requirements``; ImportError without nova."""
    with warnings.catch_warnings():
        # NOTE(founders): nova's futurist imports eventlet, which warns on
        # import that it is deprecated; the commands do not use it.
        warnings.filterwarnings('ignore', message='\\s*Eventlet is deprecated')
        return importlib.import_module('nova_image_traits.boot_requirements')


def split(flat):
    """Split Glance's flat image dict into nova's image dict.

    :param flat: the image as Glance's API returns it: its attributes and
        its properties side by side (nova's image API has properties only)
    :returns: ``{'disk_format': ..., 'properties': {...}}`` for
        ``ImageMeta.from_dict``
    """
    flat = dict(flat or {})
    image = {k: flat[k] for k in IMAGE_FIELDS if flat.get(k) is not None}
    image['properties'] = {k: v for k, v in flat.items()
                           if k not in GLANCE_CORE and v is not None}
    return image


class Deriver:
    """Add nova's derived requirements to the command line's requests.

    :param conf: the command's ConfigOpts, read from nova.conf; nova's
        ``[scheduler]`` options of :data:`SCHEDULER_OPTS` are registered
        on it when nova is importable
    """

    def __init__(self, conf):
        self.conf = conf
        self._cache = {}
        self._warned_disk_format = False
        try:
            self._nova = _boot_requirements()
            import nova.conf
            from nova import objects
        except Exception as e:
            # NOTE(founders): not only ImportError: a nova that does not
            # fit its dependencies (SQLAlchemy 2.1 for nova 34) fails at
            # import otherwise, and the commands work without it.
            self._nova = None
            self.why = '%s: %s' % (type(e).__name__, e)
            if not isinstance(e, ImportError):
                LOG.warning('nova is installed but cannot be imported: '
                            '%(e)s', {'e': self.why})
            return
        self.why = None
        objects.register_all()
        self._objects = objects
        opts = [o for o in nova.conf.scheduler.scheduler_opts
                if o.name in SCHEDULER_OPTS]
        # NOTE(founders): not nova's OptGroup object: ConfigOpts copies a
        # group shallowly, so its options' overrides would be shared with
        # nova's CONF.
        for opt in opts:
            if 'scheduler' not in conf or opt.dest not in conf.scheduler:
                conf.register_opt(opt, group='scheduler')
        try:
            # Values are checked when read: read them now.
            self.scheduler()
        except ValueError as e:
            raise cli.UsageError(cli.plain_error(e))

    @property
    def available(self):
        """Whether nova's code derives the requirements here."""
        return self._nova is not None

    def note(self):
        """The line saying what was not judged, or None."""
        return None if self.available else NOT_JUDGED % self.why

    def scheduler(self, overrides=None):
        """The ``[scheduler]`` values a derivation uses.

        :param overrides: option name to value, over the configuration's
        """
        values = {name: getattr(self.conf.scheduler, name)
                  for name in SCHEDULER_OPTS}
        values.update(overrides or {})
        return values

    def request(self, request, scheduler=None):
        """``request`` with what a boot of its new image asks, by nova.

        The query nova's ``ResourceRequest`` builds replaces the flavor's
        own, and the derived requirements of the new and the current image
        are added. Without nova, or when nova cannot read the image,
        ``request`` is returned as it is: its decisions show
        ``derived=unknown``.

        :param request: a :class:`~nova_image_traits.request.RebuildRequest`
            whose image properties are Glance's flat dicts
        :param scheduler: ``[scheduler]`` option values over the
            configuration's (the simulator's per-case options)
        """
        if not self.available:
            return request
        values = self.scheduler(scheduler)
        if (values['query_placement_for_image_type_support'] and
                not request.is_volume_backed and
                'disk_format' not in (request.image_properties or {})):
            # NOTE(founders): nova's image API has no disk_format; nova's
            # require_image_type_support would fail on the image.
            if not self._warned_disk_format:
                self._warned_disk_format = True
                LOG.warning('The image properties have no disk_format '
                            "(nova's image API does not give it): the "
                            'image type support nova asks for with '
                            '[scheduler] '
                            'query_placement_for_image_type_support is not '
                            'judged. Read images from the image service '
                            '(--image-source image) to judge it.')
            values['query_placement_for_image_type_support'] = False
        # NOTE(founders): what nova derives depends on the images, the
        # flavor and the options, not on the server: an audit derives once
        # per image and flavor, not once per server.
        key = repr((sorted(values.items()),
                    sorted((request.image_properties or {}).items()),
                    None if request.original_image_properties is None
                    else sorted(request.original_image_properties.items()),
                    request.flavor, bool(request.is_volume_backed)))
        if key not in self._cache:
            self._cache[key] = self._derive(request, values)
        found = self._cache[key]
        if found is None:
            return request
        resources, derived, original = found
        return dataclasses.replace(request, resources=resources,
                                   derived=derived, original_derived=original)

    def _derive(self, request, values):
        """``(query, derived, original derived)``, or None."""
        with self._nova.scheduler_options(values):
            spec = self._spec(request)
            meta = self._image_meta(request.image_properties,
                                    request.instance_uuid)
            if spec is None or meta is None:
                return None
            current = None
            if request.original_image_properties is not None:
                current = functools.partial(
                    self._image_meta, request.original_image_properties,
                    request.instance_uuid)
            boot = self._nova.derive(None, spec, meta,
                                     request.is_volume_backed,
                                     current=current)
            if boot.derived is not None:
                # NOTE(founders): the command line shows every source;
                # work them out now, under this derivation's [scheduler]
                # values, which are nova's only while it derives.
                boot.derived.attributed()
            return boot.query, boot.derived, boot.original

    def image_request(self, properties, flavor, scheduler=None):
        """The request of a boot of an image alone, with ``flavor``.

        ``audit images`` judges images, not servers: what the image adds
        to a boot of ``flavor`` is the same whatever the server.
        """
        return self.request(nit_request.RebuildRequest(
            instance_uuid=_NO_SERVER, compute_node_uuid=None,
            image_properties=properties, flavor=flavor), scheduler)

    def _spec(self, request):
        objects, fl = self._objects, request.flavor
        try:
            flavor = objects.Flavor(
                vcpus=fl.vcpus, memory_mb=fl.memory_mb, root_gb=fl.root_gb,
                ephemeral_gb=fl.ephemeral_gb, swap=fl.swap,
                extra_specs={str(k): str(v)
                             for k, v in fl.extra_specs.items()},
                name=fl.name or '')
            return objects.RequestSpec(
                flavor=flavor, is_bfv=bool(request.is_volume_backed),
                instance_uuid=request.instance_uuid)
        except Exception as e:
            LOG.warning('Nova cannot read the flavor of server %(s)s '
                        '(%(e)s); what nova derives from the image is not '
                        'judged.', {'s': request.instance_uuid, 'e': e})
            return None

    def _image_meta(self, flat, server):
        try:
            return self._objects.ImageMeta.from_dict(split(flat))
        except Exception as e:
            # NOTE(founders): nova refuses such an image at boot too; the
            # engine still judges its trait: properties.
            LOG.warning('Nova cannot read the image properties %(p)s of '
                        'the rebuild of server %(s)s (%(e)s); what nova '
                        'derives from them is not judged.',
                        {'p': ', '.join(sorted(
                            nit_traits.quote(k) for k in (flat or {}))),
                         's': server, 'e': e})
            return None


def requirements_cell(decision):
    """The requirements of a decision and their causes, for a table.

    ``hw_tpm_version=2.0 -> COMPUTE_SECURITY_TPM_2_0``, separated by
    ``;``, with ``+`` between the properties of one; a forbidden trait
    reads ``!NAME``, one the compute node itself must have ``root:NAME``,
    a resource ``RC:N``. A ``trait:`` property reads as its trait name.
    """
    return requirements_text(decision.requirements, decision.resources)


def requirements_text(requirements, resources=()):
    """:func:`requirements_cell` of requirements and resource needs."""
    cells = []
    for r in requirements:
        name = '%s%s%s' % (
            '!' if r.forbidden else '',
            'root:' if r.scope == nit_requirements.ROOT else '', r.trait)
        cells.append('%s -> %s' % (_cause(r), name) if r.derived else name)
    cells += ['%s -> %s:%d' % (_cause(n), n.resource_class, n.amount)
              for n in resources]
    return '; '.join(cells) or '-'


def _cause(requirement):
    # Properties that all cause one requirement: "a=1 + b=2".
    return ' + '.join(requirement.sources) or requirement.cause()
