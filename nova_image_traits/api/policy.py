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
"""Who reads the host's detail of a refusal in nova-api.

The rule (:data:`nova_image_traits.policies.refusal.HOST_DETAIL`, admin
only by default) is registered with nova's own enforcer, so that nova's
``policy.yaml`` overrides it like any of nova's rules, and checked with
nova's own ``nova.policy.authorize``. The engine knows nothing of it:
:mod:`nova_image_traits.reasons` takes the answer as an argument.
"""

import threading

from oslo_log import log as logging

from nova import policy as nova_policy

from nova_image_traits import policies
from nova_image_traits.policies import refusal as refusal_policies

LOG = logging.getLogger(__name__)

_LOCK = threading.Lock()


def _register():
    """Register our rules with nova's enforcer, once per enforcer.

    nova creates its enforcer on first use and a test may replace it
    (``nova.policy.reset``), so the check is made on every call.
    """
    nova_policy.init()
    with _LOCK:
        enforcer = nova_policy._ENFORCER
        if refusal_policies.HOST_DETAIL not in enforcer.registered_rules:
            enforcer.register_defaults(policies.list_rules())


def may_read_host_detail(context, target=None):
    """Whether the caller may read what a refusal found of the host.

    A check that fails (a rule that does not parse, an enforcer that
    cannot load its file) answers no: the caller then reads the reason
    that names nothing of the host, as a tenant does.

    :param context: the caller's ``nova.context.RequestContext``
    :param target: the policy target; nova's default (the caller's own
        project and user) when None
    """
    try:
        _register()
        return bool(nova_policy.authorize(
            context, refusal_policies.HOST_DETAIL, target, do_raise=False))
    except Exception:
        LOG.exception('The policy check of %s failed; the refusal names '
                      'nothing of the host.', refusal_policies.HOST_DETAIL)
        return False


def refusal_reason(context, decision, target=None):
    """The reason the caller of a refused rebuild reads, and a WARNING.

    The WARNING names the user and the project, so that an operator sees
    a tenant probing the host's traits with refused rebuilds (a refusal
    changes nothing and costs nothing).

    :param decision: a refusing
        :class:`~nova_image_traits.decision.Decision`
    """
    host_detail = may_read_host_detail(context, target)
    LOG.warning('Rebuild of server %(instance)s refused by the image traits '
                'pre-check for user %(user)s of project %(project)s: '
                'cause=%(cause)s strategy=%(strategy)s host_detail=%(shown)s',
                {'instance': decision.instance_uuid,
                 'user': context.user_id, 'project': context.project_id,
                 'cause': decision.cause or '-',
                 'strategy': decision.decided_by,
                 'shown': 'shown' if host_detail else 'withheld'})
    return decision.reason_for(host_detail=host_detail)
