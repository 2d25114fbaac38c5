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
"""Replace nova-conductor's image traits check on rebuild.

Nova removed ``nova.hooks`` in Victoria and offers no other extension
point in the conductor, so :func:`install` patches two methods of
``nova.conductor.manager.ComputeTaskManager`` in the running process:

* ``_validate_image_traits_for_rebuild(context, instance, image_ref)``,
  which ``rebuild_instance`` calls when the image changes on a rebuild
  (not on an evacuate), inside the ``try`` that turns ``NoValidHost`` into
  an ERROR instance with its ``image_ref`` rolled back and a fault holding
  the reason. Ours asks :func:`nova_image_traits.engine.decide`.
* ``rebuild_instance``, wrapped to remember its ``orig_sys_metadata``
  (the system metadata of the image being replaced) and request spec in a
  thread-local, so the check can compare with the original image's traits
  and restore them on a refusal (:mod:`.refusal`), and to end a refusal
  there with one WARNING instead of a traceback.

Nothing happens at import. The hook must be installed in the conductor
process itself (``nova-image-traits-conductor``, see
:mod:`nova_image_traits.cmd.conductor`): in production the API, the
scheduler and the conductors are separate processes.

Which conductor receives a rebuild (nova 34.0.0):

* ``nova.compute.api.API.rebuild`` ends with
  ``self.compute_task_api.rebuild_instance(...)``, that is
  ``nova.conductor.api.ComputeTaskAPI.rebuild_instance``, which calls
  ``nova.conductor.rpcapi.ComputeTaskAPI.rebuild_instance``. That *casts*
  ``rebuild_instance`` on topic ``conductor``, namespace ``compute_task``.
* That RPC client comes from ``nova.rpc.get_client``, which always uses the
  process-wide transport (the API's ``[DEFAULT] transport_url``). Unlike
  ``nova.rpc.ClientRouter`` (used for computes) it ignores the
  ``mq_connection`` that the API set on the context when it loaded the
  instance from its cell. So the rebuild reaches the **top-level
  ("super") conductor**, not the conductor of the instance's cell.
* There, ``ComputeTaskManager.rebuild_instance`` is decorated with
  ``@targets_cell``: it reads the instance mapping from the API database
  and targets the context at the cell's database and message queue. The
  image traits check runs in the super conductor; only the cast to the
  compute service goes through the cell's queue.

Install the hook in every conductor listening on the API-level transport
URL (in a single-cell deployment, all conductors). Installing it in cell
conductors too does no harm.
"""

import dataclasses
import functools
import inspect
import threading

from oslo_log import log as logging

import nova.conf
from nova import exception
from nova import objects

from nova_image_traits.conductor import refusal
from nova_image_traits import conf as nit_conf
from nova_image_traits import engine
from nova_image_traits import exception as nit_exception
from nova_image_traits.i18n import _
from nova_image_traits import nova_request

LOG = logging.getLogger(__name__)

#: Marks the functions this module puts on ``ComputeTaskManager``.
_MARKER = '_nova_image_traits_hook'

_VALIDATE = '_validate_image_traits_for_rebuild'
_REBUILD = 'rebuild_instance'

#: Parameters nova calls ``_validate_image_traits_for_rebuild`` with.
_VALIDATE_PARAMS = ('self', 'context', 'instance', 'image_ref')
#: Parameters of ``rebuild_instance`` the hook relies on.
_REBUILD_PARAMS = ('self', 'context', 'instance', 'orig_image_ref',
                   'image_ref', 'orig_sys_metadata', 'request_spec')

# The originals, while installed: {attribute name: function}.
_ORIGINALS = {}
_LOCK = threading.Lock()
# NOTE: created by install(), not at import: under eventlet, the
# threading.local class must be looked up after monkey patching so that
# each green thread gets its own storage. In threading mode it is the
# native thread-local, which is what nova's RPC server threads need.
_LOCAL = None


class HookInstallError(nit_exception.NovaImageTraitsException):
    msg_fmt = ('Cannot install the nova-image-traits rebuild hook into '
               'nova-conductor (nova %(version)s): %(why)s. This release of '
               'nova-image-traits supports nova 34.')


#: Why the hook could not be installed in this process, or None; set by
#: :func:`report_unsupported` for status checks to read.
UNSUPPORTED = None


def report_unsupported(error, again=False):
    """Record and log, once per process, that the hook is not active.

    The conductor then runs with nova's own image traits check, which
    :func:`install` left untouched.

    :param error: the :class:`HookInstallError`
    :param again: log it even if it was already, as the launcher does
        once nova has set up logging (the first line went to stderr)
    """
    global UNSUPPORTED
    with _LOCK:
        if UNSUPPORTED is not None and not again:
            return
        UNSUPPORTED = str(error)
    LOG.critical('%s The conductor starts with nova\'s own image traits '
                 'check on rebuild; nova-image-traits strategies are not '
                 'applied by the conductor. Set [image_traits] '
                 'hook_on_unsupported_nova = refuse_to_start to refuse to '
                 'start instead.', error)


class _Capture:
    """What ``rebuild_instance`` was called with, for our check."""

    __slots__ = ('instance_uuid', 'image_ref', 'orig_image_ref',
                 'orig_sys_metadata', 'request_spec')

    def __init__(self, instance_uuid, image_ref, orig_image_ref,
                 orig_sys_metadata, request_spec):
        self.instance_uuid = instance_uuid
        self.image_ref = image_ref
        self.orig_image_ref = orig_image_ref
        self.orig_sys_metadata = orig_sys_metadata
        self.request_spec = request_spec


def _nova_version():
    try:
        from nova import version
        return version.version_string()
    except Exception:
        return 'unknown'


def _fail(why, **kwargs):
    raise HookInstallError(version=_nova_version(), why=why % kwargs)


def _param_names(func):
    return tuple(inspect.signature(func).parameters)


def _verify(manager_cls):
    """Check every nova internal the hook relies on, or raise."""
    for name in (_VALIDATE, _REBUILD):
        if not callable(inspect.getattr_static(manager_cls, name, None)):
            _fail('nova.conductor.manager.ComputeTaskManager.%(name)s does '
                  'not exist', name=name)

    validate = _original(manager_cls, _VALIDATE)
    params = _param_names(validate)
    if params != _VALIDATE_PARAMS:
        _fail('ComputeTaskManager.%(name)s%(params)s does not have the '
              'expected parameters %(expected)s', name=_VALIDATE,
              params='(%s)' % ', '.join(params),
              expected='(%s)' % ', '.join(_VALIDATE_PARAMS))

    rebuild = _original(manager_cls, _REBUILD)
    params = _param_names(rebuild)
    missing = [p for p in _REBUILD_PARAMS if p not in params]
    if missing or params[:2] != _REBUILD_PARAMS[:2]:
        _fail('ComputeTaskManager.%(name)s lacks the parameters %(missing)s',
              name=_REBUILD, missing=', '.join(missing) or 'self, context')

    # NOTE: if rebuild_instance stopped calling the check, replacing the
    # check would silently do nothing. The name appears in the code object
    # of the undecorated method as long as it is called there.
    code = getattr(inspect.unwrap(rebuild), '__code__', None)
    if code is None or _VALIDATE not in code.co_names:
        _fail('ComputeTaskManager.%(rebuild)s no longer calls '
              '%(validate)s', rebuild=_REBUILD, validate=_VALIDATE)
    init_code = getattr(manager_cls.__init__, '__code__', None)
    if init_code is None or 'image_api' not in init_code.co_names:
        _fail('ComputeTaskManager no longer has an image_api attribute')

    from nova.objects import compute_node
    from nova.objects import image_meta
    checks = (
        (exception, 'NoValidHost'),
        (image_meta.ImageMeta, 'from_image_ref'),
        (compute_node.ComputeNode, 'get_by_host_and_nodename'),
    )
    for owner, attr in checks:
        if not hasattr(owner, attr):
            _fail('%(owner)s.%(attr)s does not exist',
                  owner=getattr(owner, '__name__', owner), attr=attr)
    params = _param_names(image_meta.ImageMeta.from_image_ref)
    if params != ('context', 'image_api', 'image_ref'):
        _fail('ImageMeta.from_image_ref%(params)s changed',
              params='(%s)' % ', '.join(params))


def _original(manager_cls, name):
    func = manager_cls.__dict__.get(name)
    if func is None:
        # Inherited: not the layout of nova 34.
        _fail('ComputeTaskManager.%(name)s is not defined by the class '
              'itself', name=name)
    return getattr(func, _MARKER, func)


def _manager_class():
    try:
        from nova.conductor import manager
    except ImportError as e:
        _fail('nova.conductor.manager cannot be imported: %(e)s', e=e)
    cls = getattr(manager, 'ComputeTaskManager', None)
    if cls is None:
        _fail('nova.conductor.manager.ComputeTaskManager does not exist')
    return cls


def is_installed():
    """Return True when the hook is active in this process."""
    cls = _manager_class()
    return all(hasattr(cls.__dict__.get(name), _MARKER)
               for name in (_VALIDATE, _REBUILD))


def verify():
    """Check, without installing anything, that the hook fits this nova.

    The same verification :func:`install` makes before it patches nova;
    ``nova-image-traits-status upgrade check`` calls it.

    :returns: the version of the nova verified
    :raises HookInstallError: naming the first nova internal that changed
    """
    _verify(_manager_class())
    return _nova_version()


def install():
    """Install the rebuild hook into ``ComputeTaskManager``.

    Call it in the nova-conductor process, after nova's eventlet monkey
    patching decision (importing ``nova.cmd.conductor`` makes it) and before
    the service starts. Calling it again is harmless.

    :raises HookInstallError: when this nova lacks an internal the hook
        needs, so that the conductor fails at start instead of silently
        running without the check
    """
    global _LOCAL
    with _LOCK:
        cls = _manager_class()
        if is_installed():
            return
        _verify(cls)
        # Register [image_traits] on nova's configuration now, so the
        # options exist however early they are read.
        nit_conf.register_opts(nova.conf.CONF)
        if _LOCAL is None:
            _LOCAL = threading.local()
        originals = {name: cls.__dict__[name]
                     for name in (_VALIDATE, _REBUILD)}
        setattr(cls, _REBUILD, _wrap_rebuild(originals[_REBUILD]))
        setattr(cls, _VALIDATE, _mark(validate_image_traits_for_rebuild,
                                      originals[_VALIDATE]))
        _ORIGINALS.update(originals)


def log_installed():
    """Log the INFO line by which an operator sees the hook is active.

    :func:`install` runs before nova has configured logging, so the
    launcher calls this once nova's ``logging.setup`` has run.
    """
    if is_installed():
        LOG.info('nova-image-traits rebuild hook installed in '
                 'nova-conductor (nova %s).', _nova_version())


def uninstall():
    """Restore nova's own methods. Harmless when not installed."""
    with _LOCK:
        if not _ORIGINALS:
            return
        cls = _manager_class()
        for name, func in _ORIGINALS.items():
            setattr(cls, name, func)
        _ORIGINALS.clear()


def _mark(func, original):
    @functools.wraps(func)
    def hooked(*args, **kwargs):
        return func(*args, **kwargs)
    setattr(hooked, _MARKER, original)
    return hooked


def _wrap_rebuild(original):
    signature = inspect.signature(original)

    @functools.wraps(original)
    def rebuild_instance(self, context, *args, **kwargs):
        try:
            arguments = signature.bind(self, context, *args, **kwargs)
        except TypeError:
            # Let nova report the bad call the way it always did.
            return original(self, context, *args, **kwargs)
        arguments = arguments.arguments
        instance = arguments.get('instance')
        capture = _Capture(
            getattr(instance, 'uuid', None), arguments.get('image_ref'),
            arguments.get('orig_image_ref'),
            arguments.get('orig_sys_metadata'),
            arguments.get('request_spec'))
        previous = getattr(_LOCAL, 'capture', None)
        _LOCAL.capture = capture
        try:
            return original(self, context, *args, **kwargs)
        except refusal.ImageTraitsRefused as e:
            # NOTE: nova has set the server to ERROR, rolled image_ref back
            # and recorded the fault and the event; the check restored the
            # rest. Stop here: rebuild_instance is a cast, nobody waits for
            # the exception, and oslo.messaging would log a traceback.
            refusal.log_refusal(instance, capture.image_ref,
                                capture.orig_image_ref, e)
            return None
        finally:
            _LOCAL.capture = previous

    setattr(rebuild_instance, _MARKER, original)
    return rebuild_instance


def _captured(instance, image_ref):
    capture = getattr(_LOCAL, 'capture', None) if _LOCAL else None
    if (capture is None or capture.instance_uuid != instance.uuid or
            capture.image_ref != image_ref):
        return None
    return capture


def _is_volume_backed(context, instance, capture):
    spec = capture.request_spec if capture else None
    if spec is not None and 'is_bfv' in spec:
        return bool(spec.is_bfv)
    from nova.compute import utils as compute_utils
    return compute_utils.is_volume_backed_instance(context, instance)


def validate_image_traits_for_rebuild(self, context, instance, image_ref):
    """Our ``ComputeTaskManager._validate_image_traits_for_rebuild``.

    :raises nova.exception.NoValidHost: an
        :class:`~nova_image_traits.conductor.refusal.ImageTraitsRefused`,
        when the rebuild is refused, after the rest of the server is
        returned to its current image; nova then sets the instance to
        ERROR, rolls back its ``image_ref`` and records the reason as the
        instance fault
    """
    conf = nova.conf.CONF
    capture = _captured(instance, image_ref)
    try:
        image_meta = objects.ImageMeta.from_image_ref(
            context, self.image_api, image_ref)
        image_props = nova_request.image_properties_from_image_meta(
            image_meta)
        if not image_props:
            LOG.debug('New image %s requires no traits; rebuild allowed.',
                      image_ref, instance=instance)
            return
        if capture is None:
            LOG.debug('The original image of the rebuild is unknown to the '
                      'image traits hook.', instance=instance)
        compute_node = objects.ComputeNode.get_by_host_and_nodename(
            context, instance.host, instance.node)
        request = nova_request.from_conductor_rebuild(
            instance, image_meta,
            capture.orig_sys_metadata if capture else None,
            compute_node,
            is_volume_backed=_is_volume_backed(context, instance, capture),
            orig_image_ref=capture.orig_image_ref if capture else None,
            request_spec=capture.request_spec if capture else None)
        gid = getattr(context, 'global_id', None)
        if gid:
            request = dataclasses.replace(request, global_request_id=gid)
        decision = engine.decide(request, conf=conf)
    except Exception:
        # NOTE: anything escaping from here other than NoValidHost would
        # leave the instance stuck in task_state REBUILDING, because
        # rebuild_instance only handles NoValidHost and a few others.
        LOG.exception('The image traits check failed unexpectedly for the '
                      'rebuild to image %s.', image_ref, instance=instance)
        if engine.fails_open(conf):
            LOG.warning('Allowing the rebuild unchecked because '
                        '[image_traits] on_placement_error=accept.',
                        instance=instance)
            return
        _refuse(context, instance, capture, _(
            'The image traits of the new image could not be checked because '
            'of an internal error.'))

    if decision.allowed:
        LOG.debug('Rebuild to image %(image)s allowed: %(reason)s',
                  {'image': image_ref, 'reason': decision.user_reason()},
                  instance=instance)
        return
    _refuse(context, instance, capture, decision.user_reason())


def _refuse(context, instance, capture, reason):
    # NOTE: restored here, while task_state is still REBUILDING: once
    # nova's handler has set ERROR, another rebuild may already be on its
    # way, and restoring after it would undo that one.
    restored = ()
    if capture is not None:
        restored = refusal.restore(context, instance.uuid,
                                   capture.orig_sys_metadata,
                                   capture.orig_image_ref)
    raise refusal.ImageTraitsRefused(restored=restored, reason=reason)
