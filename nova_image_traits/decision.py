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
"""The outcome of a rebuild decision, for logs and for users."""

import dataclasses
import typing as ty

from oslo_log import log as logging

from nova_image_traits import reasons

LOG = logging.getLogger(__name__)

ACCEPT = 'accept'
REJECT = 'reject'
INCONCLUSIVE = 'inconclusive'
ERROR = 'error'
OUTCOMES = (ACCEPT, REJECT, INCONCLUSIVE, ERROR)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What one strategy concluded.

    :ivar outcome: one of :data:`OUTCOMES`
    :ivar missing: the traits whose requirement the host does not meet
        (missing where required, present where forbidden)
    :ivar providers: resource provider UUIDs the strategy consulted
    :ivar detail: a short technical explanation, for logs and reasons
    :ivar unmet: the unmet
        :class:`~nova_image_traits.requirements.Requirement` objects; a
        strategy that sets only ``missing`` has them found by name
    """
    outcome: str
    missing: frozenset = frozenset()
    providers: tuple = ()
    detail: str = ''
    unmet: tuple = ()


@dataclasses.dataclass
class Decision:
    """A rebuild decision: what was decided, how, and at what cost.

    :ivar outcome: the deciding verdict's outcome, one of :data:`OUTCOMES`
    :ivar allowed: whether the rebuild may go ahead
    :ivar strategy: the configured strategy
    :ivar fallback: the fallback strategy that decided, if one did
    :ivar required: traits the new image requires (its ``trait:``
        properties and what nova derives)
    :ivar requirements: every
        :class:`~nova_image_traits.requirements.Requirement` judged
    :ivar resources: the
        :class:`~nova_image_traits.requirements.ResourceNeed` objects judged
    :ivar derived: ``judged``, ``off`` (``[image_traits]
        judge_derived_requirements``) or ``unknown`` (nova's code could not
        derive them here)
    :ivar missing: traits (or resource classes) whose requirement the host
        was found not to meet
    :ivar unmet: the unmet requirements
    :ivar providers: resource providers consulted, in order
    :ivar requests: placement requests sent for this decision
    :ivar known: placement reads answered without a request, by traits
        whose generation placement had just confirmed
        (:mod:`~nova_image_traits.placement.known_traits`)
    :ivar elapsed: seconds spent deciding
    :ivar cause: a short machine-readable cause of a refusal or an error
    :ivar transient: whether the error may pass by itself, so that the
        same request may succeed later
    :ivar detail: technical detail for operators (never shown to users)
    :ivar message: the user-facing explanation, for a caller who may read
        the host's detail
    :ivar names_host: whether ``message`` tells what placement found of
        the host or the server; :meth:`reason_for` then words it for
        callers who may not read the host's detail
    """
    outcome: str
    allowed: bool
    strategy: str
    instance_uuid: ty.Optional[str] = None
    compute_node_uuid: ty.Optional[str] = None
    host: ty.Optional[str] = None
    fallback: ty.Optional[str] = None
    required: frozenset = frozenset()
    requirements: tuple = ()
    resources: tuple = ()
    derived: str = '-'
    missing: frozenset = frozenset()
    unmet: tuple = ()
    providers: tuple = ()
    requests: int = 0
    known: int = 0
    elapsed: float = 0.0
    cause: ty.Optional[str] = None
    transient: bool = False
    detail: str = ''
    message: str = ''
    names_host: bool = False

    @property
    def decided_by(self):
        """The strategy whose verdict stands."""
        return self.fallback or self.strategy

    def reason_for(self, *, host_detail):
        """Return the reason one caller reads, fit for nova's fault column.

        It says what the user can do, and never contains placement URLs,
        tokens or stack traces. With ``host_detail`` it names the missing
        traits and the strategy; without, it names nothing the host has or
        lacks (:func:`~nova_image_traits.reasons.user_reason`).

        :param host_detail: whether the caller may read the host's detail;
            the integration module decides
        """
        return reasons.user_reason(self, host_detail=host_detail)

    def user_reason(self):
        """The reason with the host's detail, as the operator reads it.

        :meth:`reason_for` with ``host_detail=True``, for the operator's
        tools and the tests; a caller that may face a tenant says which
        reason it wants with :meth:`reason_for`.
        """
        return self.reason_for(host_detail=True)

    def log(self):
        """Log the decision as one INFO line (:data:`.reasons.LOG_LINE`)."""
        LOG.info(reasons.LOG_LINE, reasons.log_values(self))
