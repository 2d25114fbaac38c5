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
"""Whether this nova has every internal the pre-check relies on.

The pre-check (:mod:`.rebuild_wrapper`) decides inside
``nova.compute.api.API.rebuild``, at its first write, and reads nova's own
values there. :func:`verify` checks, before anything is wrapped, every name
it relies on, as :mod:`nova_image_traits.conductor.compat` does for the
conductor hook:

* ``API.rebuild`` and its first parameters;
* the local variables it reads at the first write, and that each is set
  before it, with no other write, ``save()`` or action record before it;
* that the servers controller's rebuild action lets a 400 and a 409 out
  (``wsgi.expected_errors``), so that nova's own error handling answers
  the pre-check's refusal;
* the nova objects the decision uses.
"""

import inspect

from nova_image_traits.conductor import compat as conductor_compat
from nova_image_traits import exception as nit_exception
from nova_image_traits import series

#: Marks the wrapper the pre-check puts on ``API.rebuild``.
MARKER = '_nova_image_traits_precheck'

#: Where the decision is made: ``API.rebuild``'s first write.
FIRST_WRITE = 'instance.save(expected_task_state=[None])'
#: The parameters of ``API.rebuild`` the wrapper relies on, in order.
PARAMS = ('self', 'context', 'instance', 'image_href', 'admin_password')
#: The locals read at the first write, each with how nova sets it.
LOCALS = {
    'image': 'image_id, image = ',
    'image_href': None,
    'orig_image_ref': 'orig_image_ref = ',
    'request_spec': 'request_spec = ',
    'flavor': 'flavor = ',
    'is_volume_backed': 'is_volume_backed = ',
}
#: What must not happen before the first write.
_WRITES = ('.save(', '_record_action_start(', '.create(', '.destroy(')
#: The answers of the pre-check, which the rebuild action must let out.
CODES = (400, 409)


class PrecheckInstallError(nit_exception.NovaImageTraitsException):
    """This nova lacks an internal the pre-check relies on."""

    msg_fmt = ('Cannot install the nova-image-traits pre-check into nova-api '
               '(nova %(version)s): %(why)s. This release of '
               'nova-image-traits supports %(supported)s.')

    def __init__(self, **kwargs):
        kwargs.setdefault('supported', series.supported())
        super().__init__(**kwargs)


def _fail(why, **kwargs):
    raise PrecheckInstallError(version=conductor_compat.nova_version(),
                               why=why % kwargs)


def original(api_cls):
    """``API.rebuild`` as nova defines it (decorated), without our wrapper."""
    func = api_cls.__dict__.get('rebuild')
    if func is None:
        _fail('nova.compute.api.API.rebuild does not exist')
    return getattr(func, MARKER, func)


def undecorated(api_cls):
    """The body of ``API.rebuild``, under nova's decorators."""
    return inspect.unwrap(original(api_cls))


def verify(api_cls=None, controller_cls=None):
    """Check every nova internal the pre-check relies on, or raise.

    :raises PrecheckInstallError: naming the first one that changed, or
        the error the check itself met (a nova too different to inspect)
    """
    try:
        _verify(api_cls, controller_cls)
    except PrecheckInstallError:
        raise
    except Exception as e:
        _fail('checking it failed: %(type)s: %(error)s',
              type=type(e).__name__, error=e)


def _verify(api_cls, controller_cls):
    if api_cls is None:
        from nova.compute import api as compute_api
        api_cls = compute_api.API
    if controller_cls is None:
        from nova.api.openstack.compute import servers
        controller_cls = servers.ServersController
    body = undecorated(api_cls)
    params = tuple(inspect.signature(body).parameters)
    if params[:len(PARAMS)] != PARAMS:
        _fail('API.rebuild%(params)s does not start with %(expected)s',
              params='(%s)' % ', '.join(params),
              expected='(%s)' % ', '.join(PARAMS))
    code = getattr(body, '__code__', None)
    # NOTE(nova-image-traits): a local its nested function reads is a cell.
    names = set(code.co_varnames + code.co_cellvars) if code else set()
    missing = [name for name in LOCALS if name not in names]
    if missing:
        _fail('API.rebuild has no local %(names)s',
              names=', '.join(missing))
    _verify_source(body)
    _verify_action(controller_cls)
    from nova import objects
    objects.register_all()  # done already in nova-api; idempotent
    for owner, attr in (('ImageMeta', 'from_dict'),
                        ('ComputeNode', 'get_by_host_and_nodename'),
                        ('InstanceMapping', 'get_by_instance_uuid')):
        if not hasattr(getattr(objects, owner, None), attr):
            _fail('nova.objects.%(owner)s.%(attr)s does not exist',
                  owner=owner, attr=attr)


def _verify_source(body):
    """Every value read is set before the first write; nothing writes."""
    try:
        source = inspect.getsource(body)
    except (OSError, TypeError):
        _fail('the source of API.rebuild cannot be read')
    # NOTE(nova-image-traits): comments and docstrings may name anything.
    lines = [line.split('#', 1)[0] for line in source.splitlines()]
    source = '\n'.join(lines)
    at = source.find(FIRST_WRITE)
    if at < 0:
        _fail('API.rebuild no longer calls %(call)s', call=FIRST_WRITE)
    before = source[:at]
    for name, assignment in LOCALS.items():
        if assignment and assignment not in before:
            _fail('API.rebuild no longer sets %(name)s before %(call)s',
                  name=name, call=FIRST_WRITE)
    # The nested _reset_image_metadata is defined, not called, before it.
    nested = before.find('def _reset_image_metadata')
    checked = before if nested < 0 else (
        before[:nested] + before[before.find('return', nested):])
    for write in _WRITES:
        if write in checked:
            _fail('API.rebuild calls %(write)s before %(call)s',
                  write=write.rstrip('('), call=FIRST_WRITE)


def _expected_errors(func):
    """The codes of the ``wsgi.expected_errors`` around ``func``, or None."""
    from nova.api.openstack import wsgi
    marker = wsgi.expected_errors(400)(lambda: None).__code__
    while func is not None:
        if getattr(func, '__code__', None) is marker:
            cells = dict(zip(func.__code__.co_freevars,
                             (c.cell_contents for c in func.__closure__)))
            errors = cells.get('errors')
            return (errors,) if isinstance(errors, int) else tuple(errors)
        func = getattr(func, '__wrapped__', None)
    return None


def _verify_action(controller_cls):
    for func in vars(controller_cls).values():
        if getattr(func, 'wsgi_action', None) == 'rebuild':
            break
    else:
        _fail('ServersController has no rebuild action')
    errors = _expected_errors(func)
    if errors is None or not set(CODES) <= set(errors):
        _fail('the rebuild action no longer lets %(codes)s out (it expects '
              '%(errors)s)', codes=' and '.join(map(str, CODES)),
              errors=errors)
