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
"""Our ``ComputeTaskManager._validate_image_traits_for_rebuild``.

Nova calls it when the image changes on a rebuild (not on an evacuate),
inside the ``try`` that turns ``NoValidHost`` into an ERROR instance with
its ``image_ref`` rolled back and a fault holding the reason. It asks
:func:`nova_image_traits.engine.decide`.

Nova passes it the context, the instance and the new image only; the
original image's system metadata and the request spec are arguments of
``rebuild_instance``, whose wrapper (:mod:`.hook`) keeps them here, per
thread, with :func:`remember`. A refusal restores nothing itself: the
hook restores the server after any refusal (:mod:`.refusal`).
"""

import contextlib
import dataclasses
import threading

from oslo_log import log as logging

from nova.compute import utils as compute_utils
import nova.conf
from nova import objects

from nova_image_traits.conductor import refusal
from nova_image_traits import engine
from nova_image_traits import nova_request
from nova_image_traits import reasons

LOG = logging.getLogger(__name__)

# NOTE(founders): created on first use, not at import: under eventlet, the
# threading.local class must be looked up after monkey patching so that each
# green thread gets its own storage. In threading mode it is the native
# thread-local, which is what nova's RPC server threads need.
_LOCAL = None


def prepare():
    """Create the thread-local storage.

    :func:`.hook.install` calls it, under its lock, before it patches nova.
    """
    global _LOCAL
    if _LOCAL is None:
        _LOCAL = threading.local()


@contextlib.contextmanager
def remember(arguments):
    """Keep the arguments of ``rebuild_instance`` while the block runs.

    :param arguments: a dict of ``rebuild_instance``'s arguments by name
    """
    _LOCAL.rebuild = arguments
    try:
        yield
    finally:
        _LOCAL.rebuild = None


def current():
    """The arguments :func:`remember` keeps in this thread, or None."""
    return getattr(_LOCAL, 'rebuild', None) if _LOCAL is not None else None


def validate_image_traits_for_rebuild(self, context, instance, image_ref):
    """Our ``ComputeTaskManager._validate_image_traits_for_rebuild``.

    :raises nova.exception.NoValidHost: an
        :class:`~nova_image_traits.conductor.refusal.ImageTraitsRefused`,
        when the rebuild is refused; nova then rolls back the instance's
        ``image_ref``, the hook returns the rest of the server to its
        current image, and nova sets the instance to ERROR and records the
        reason as the instance fault: the tenant-safe reason as its
        message, the host's detail in its admin-only details
    """
    conf = nova.conf.CONF
    # NOTE(founders): nova calls this from rebuild_instance, which the hook
    # wraps with remember(); there nova needs the request spec itself
    # (_restrict_request_spec_to_cell reads it next). Without them the
    # check fails as an internal error below, and the refusal restores
    # nothing.
    rebuild = getattr(_LOCAL, 'rebuild', None) or {}
    try:
        image_meta = objects.ImageMeta.from_image_ref(
            context, self.image_api, image_ref)
        spec = rebuild.get('request_spec')
        if spec is None and not nova_request.image_properties_from_image_meta(
                image_meta):
            # NOTE(founders): nothing to derive from without the request spec
            # (see above); an image without trait: properties passes, as in
            # nova's own check.
            LOG.debug('No request spec: what nova derives from image %s '
                      'cannot be judged, and it requires no traits; rebuild '
                      'allowed.', image_ref, instance=instance)
            return
        spec = rebuild['request_spec']
        if 'is_bfv' in spec:
            volume_backed = spec.is_bfv
        else:
            volume_backed = compute_utils.is_volume_backed_instance(
                context, instance)
        request = nova_request.rebuild_request(
            context, spec, image_meta, None, instance.host,
            flavor=instance.flavor,
            orig_sys_metadata=rebuild['orig_sys_metadata'],
            orig_image_ref=rebuild['orig_image_ref'],
            is_volume_backed=volume_backed, conf=conf)
        if not request.judged():
            LOG.debug('New image %s requires nothing of the host; rebuild '
                      'allowed.', image_ref, instance=instance)
            return
        compute_node = objects.ComputeNode.get_by_host_and_nodename(
            context, instance.host, instance.node)
        decision = engine.decide(dataclasses.replace(
            request, compute_node_uuid=compute_node.uuid), conf=conf)
    except Exception:
        # NOTE(founders): anything escaping from here other than NoValidHost
        # would leave the instance stuck in task_state REBUILDING, because
        # rebuild_instance only handles NoValidHost and a few others.
        LOG.exception('The image traits check failed unexpectedly for the '
                      'rebuild to image %s.', image_ref, instance=instance)
        if engine.fails_open(conf):
            LOG.warning('Allowing the rebuild unchecked because '
                        '[image_traits] on_placement_error=accept.',
                        instance=instance)
            return
        raise refusal.ImageTraitsRefused(reason=reasons.check_failed())

    # NOTE(nova-image-traits): the fault's message is stored once and read
    # by everyone who can see the server, so it names nothing of the host;
    # the reason with the host's detail goes to the admin-only details.
    detail = decision.reason_for(host_detail=True)
    if decision.allowed:
        LOG.debug('Rebuild to image %(image)s allowed: %(reason)s',
                  {'image': image_ref, 'reason': detail}, instance=instance)
        return
    raise refusal.ImageTraitsRefused(
        reason=decision.reason_for(host_detail=False), detail=detail)
