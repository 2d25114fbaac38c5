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
  replaced by :func:`.check.validate_image_traits_for_rebuild`;
* ``rebuild_instance``, wrapped to remember its ``orig_sys_metadata``
  (the system metadata of the image being replaced) and request spec
  for the check, so the check can compare with the original image's
  traits, and to end the check's own refusal there with one WARNING
  instead of a traceback;
* ``_set_vm_state_and_notify``, wrapped so that, when
  ``rebuild_instance`` refuses a rebuild to a new image (whoever refused
  it: the check, a scheduler filter, placement), the server is returned to
  its current image (:func:`.refusal.restore`) just before nova sets it to
  ERROR.

:mod:`.compat` checks first that this nova has what the hook relies on.

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

import functools
import inspect
import threading

from oslo_log import log as logging

import nova.conf

from nova_image_traits.conductor import check
from nova_image_traits.conductor import compat
from nova_image_traits.conductor import refusal
from nova_image_traits import conf as nit_conf

LOG = logging.getLogger(__name__)

HookInstallError = compat.HookInstallError

_LOCK = threading.Lock()

#: The methods of ``ComputeTaskManager`` the hook replaces or wraps.
_PATCHED = (compat.VALIDATE, compat.REBUILD, compat.NOTIFY)


def report_unsupported(error):
    """Log that the hook is not active in this process.

    The conductor then runs with nova's own image traits check, which
    :func:`install` left untouched. The launcher logs it twice: to stderr
    at once, and again once nova has set up logging.

    :param error: the :class:`HookInstallError`
    """
    LOG.critical('%s The conductor starts with nova\'s own image traits '
                 'check on rebuild; nova-image-traits strategies are not '
                 'applied by the conductor. Set [image_traits] '
                 'hook_on_unsupported_nova = refuse_to_start to refuse to '
                 'start instead.', error)


def is_installed():
    """Return True when the hook is active in this process."""
    cls = compat.manager_class()
    return all(hasattr(cls.__dict__.get(name), compat.MARKER)
               for name in _PATCHED)


def verify():
    """Check, without installing anything, that the hook fits this nova.

    The same verification :func:`install` makes before it patches nova;
    ``nova-image-traits-status upgrade check`` calls it.

    :returns: the version of the nova verified
    :raises HookInstallError: naming the first nova internal that changed
    """
    cls = compat.manager_class()
    compat.verify(cls)
    compat.verify_refusal_handler(cls)
    return compat.nova_version()


def install():
    """Install the rebuild hook into ``ComputeTaskManager``.

    Call it in the nova-conductor process, after nova's eventlet monkey
    patching decision (importing ``nova.cmd.conductor`` makes it) and before
    the service starts. Calling it again is harmless.

    :raises HookInstallError: when this nova lacks an internal the hook
        needs, so that the launcher never runs it half installed; it then
        starts nova's own check or exits, as ``[image_traits]
        hook_on_unsupported_nova`` says
    """
    with _LOCK:
        cls = compat.manager_class()
        if is_installed():
            return
        compat.verify(cls)
        compat.verify_refusal_handler(cls)
        # Register [image_traits] on nova's configuration now, so the
        # options exist however early they are read.
        nit_conf.register_opts(nova.conf.CONF)
        check.prepare()
        # NOTE(founders): unwrapped, should one of them still be ours.
        setattr(cls, compat.REBUILD,
                _wrap_rebuild(compat.original(cls, compat.REBUILD)))
        setattr(cls, compat.VALIDATE,
                _mark(check.validate_image_traits_for_rebuild,
                      compat.original(cls, compat.VALIDATE)))
        setattr(cls, compat.NOTIFY,
                _wrap_notify(compat.original(cls, compat.NOTIFY)))


def log_installed():
    """Log the INFO line by which an operator sees the hook is active.

    :func:`install` runs before nova has configured logging, so the
    launcher calls this once nova's ``logging.setup`` has run.
    """
    if is_installed():
        LOG.info('nova-image-traits rebuild hook installed in '
                 'nova-conductor (nova %s).', compat.nova_version())


def uninstall():
    """Restore nova's own methods. Harmless when not installed."""
    with _LOCK:
        if is_installed():
            cls = compat.manager_class()
            for name in _PATCHED:
                # Each of ours keeps nova's original under the marker.
                setattr(cls, name, compat.original(cls, name))


def _mark(func, original):
    @functools.wraps(func)
    def hooked(*args, **kwargs):
        return func(*args, **kwargs)
    setattr(hooked, compat.MARKER, original)
    return hooked


def _refused_rebuild(method, instance_uuid):
    """The arguments of the rebuild a refusal is for, or None.

    Only a rebuild to a new image that is not an evacuation: then nova's
    API has written the new image into the server (an evacuation keeps
    the image, and rolls nothing back).
    """
    rebuild = check.current()
    if (rebuild is None or method != 'rebuild_server' or
            rebuild.get('recreate') or
            rebuild.get('orig_image_ref') == rebuild.get('image_ref')):
        return None
    instance = rebuild.get('instance')
    if instance is None or instance.uuid != instance_uuid:
        return None
    return rebuild


def _wrap_notify(original):
    @functools.wraps(original)
    def _set_vm_state_and_notify(self, context, instance_uuid, method,
                                 updates, ex, request_spec):
        rebuild = _refused_rebuild(method, instance_uuid)
        if rebuild is not None and _RESTORATION not in rebuild:
            # NOTE(nova-image-traits): here nova's handler has rolled
            # image_ref back, and the task state is still REBUILDING: once
            # this sets ERROR, another rebuild may already be on its way, and
            # restoring after it would undo that one.
            rebuild[_RESTORATION] = refusal.restore(
                context, instance_uuid, rebuild.get('orig_sys_metadata'),
                rebuild.get('orig_image_ref'),
                volume_backed=rebuild[_VOLUME_BACKED],
                image_ref=rebuild[_IMAGE_REF],
                boot_image_id=refusal.boot_image_id(rebuild.get('bdms')))
        return original(self, context, instance_uuid, method, updates, ex,
                        request_spec)

    setattr(_set_vm_state_and_notify, compat.MARKER, original)
    return _set_vm_state_and_notify


#: Keys the wrappers add to the remembered arguments of a rebuild.
_RESTORATION = 'nova_image_traits.restoration'
_VOLUME_BACKED = 'nova_image_traits.volume_backed'
_IMAGE_REF = 'nova_image_traits.image_ref'


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
        # NOTE(nova-image-traits): nova's API keeps the image_ref of a
        # volume-backed server over a rebuild (empty, or the imageRef it was
        # created with); read it before nova's refusal handler overwrites it.
        arguments[_VOLUME_BACKED] = instance is not None and (
            refusal.is_volume_backed(context, instance,
                                     arguments.get('bdms'),
                                     arguments.get('request_spec')))
        arguments[_IMAGE_REF] = instance.image_ref if instance else None
        try:
            with check.remember(arguments):
                return original(self, context, *args, **kwargs)
        except refusal.ImageTraitsRefused as e:
            # NOTE(founders): nova has set the server to ERROR, rolled
            # image_ref back and recorded the fault and the event; the hook
            # restored the rest. Stop here: rebuild_instance is a cast, nobody
            # waits for the exception, and oslo.messaging would log a
            # traceback.
            refusal.log_refusal(instance, arguments.get('image_ref'),
                                arguments.get('orig_image_ref'), e,
                                arguments.get(_RESTORATION))
            return None
        except Exception as e:
            if _RESTORATION in arguments:
                # Refused by someone else (a scheduler filter): nova logs
                # and raises it as it always did; say what was restored.
                refusal.log_refusal(instance, arguments.get('image_ref'),
                                    arguments.get('orig_image_ref'), e,
                                    arguments[_RESTORATION])
            raise

    setattr(rebuild_instance, compat.MARKER, original)
    return rebuild_instance
