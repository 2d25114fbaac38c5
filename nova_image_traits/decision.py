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

LOG = logging.getLogger(__name__)

ACCEPT = 'accept'
REJECT = 'reject'
INCONCLUSIVE = 'inconclusive'
ERROR = 'error'
OUTCOMES = (ACCEPT, REJECT, INCONCLUSIVE, ERROR)

#: What the user can do when traits are missing on the current host.
_ADVICE = ('Rebuild with an image that does not require them, or create a '
           'new server with this image so that the scheduler can choose a '
           'host that provides them.')


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What one strategy concluded.

    :ivar outcome: one of :data:`OUTCOMES`
    :ivar missing: required traits the host does not provide
    :ivar providers: resource provider UUIDs the strategy consulted
    :ivar detail: a short technical explanation, for logs and reasons
    """
    outcome: str
    missing: frozenset = frozenset()
    providers: tuple = ()
    detail: str = ''


@dataclasses.dataclass
class Decision:
    """A rebuild decision: what was decided, how, and at what cost.

    :ivar outcome: the deciding verdict's outcome, one of :data:`OUTCOMES`
    :ivar allowed: whether the rebuild may go ahead
    :ivar strategy: the configured strategy
    :ivar fallback: the fallback strategy that decided, if one did
    :ivar required: traits the new image requires
    :ivar missing: required traits the host was found not to provide
    :ivar providers: resource providers consulted, in order
    :ivar requests: placement requests sent for this decision
    :ivar elapsed: seconds spent deciding
    :ivar cause: a short machine-readable cause of a refusal or an error
    :ivar detail: technical detail for operators (never shown to users)
    :ivar message: the user-facing explanation, without advice
    """
    outcome: str
    allowed: bool
    strategy: str
    instance_uuid: ty.Optional[str] = None
    compute_node_uuid: ty.Optional[str] = None
    host: ty.Optional[str] = None
    fallback: ty.Optional[str] = None
    required: frozenset = frozenset()
    missing: frozenset = frozenset()
    providers: tuple = ()
    requests: int = 0
    elapsed: float = 0.0
    cause: ty.Optional[str] = None
    detail: str = ''
    message: str = ''

    @property
    def decided_by(self):
        """The strategy whose verdict stands."""
        return self.fallback or self.strategy

    def user_reason(self):
        """Return a reason fit for a ``NoValidHost`` fault.

        It names the missing traits and the strategy and says what the user
        can do. It never contains placement URLs, tokens or stack traces.
        """
        if self.allowed:
            return ('The rebuild was accepted by image traits strategy '
                    '%s.' % self.decided_by)
        return self.message or 'The rebuild was refused.'

    def log_fields(self):
        return {
            'outcome': self.outcome,
            'allowed': self.allowed,
            'strategy': self.strategy,
            'fallback': self.fallback or '-',
            'instance': self.instance_uuid,
            'host': self.host or '-',
            'node': self.compute_node_uuid,
            'required': ','.join(sorted(self.required)) or '-',
            'missing': ','.join(sorted(self.missing)) or '-',
            'providers': ','.join(self.providers) or '-',
            'requests': self.requests,
            'elapsed_ms': self.elapsed * 1000.0,
            'cause': self.cause or '-',
            'detail': self.detail or '-',
        }

    def log(self, logger=None):
        """Log the decision as one INFO line."""
        (logger or LOG).info(
            'Rebuild image traits decision: outcome=%(outcome)s '
            'allowed=%(allowed)s strategy=%(strategy)s '
            'fallback=%(fallback)s instance=%(instance)s host=%(host)s '
            'node=%(node)s required=%(required)s missing=%(missing)s '
            'providers=%(providers)s requests=%(requests)d '
            'elapsed_ms=%(elapsed_ms).1f cause=%(cause)s detail=%(detail)s',
            self.log_fields())


def missing_message(missing, strategy, rule):
    """User-facing text for traits the host lacks."""
    return ('The new image requires traits that this server\'s host does '
            'not provide: %(missing)s (image traits strategy %(strategy)s: '
            '%(rule)s). %(advice)s' % {
                'missing': ', '.join(sorted(missing)),
                'strategy': strategy, 'rule': rule, 'advice': _ADVICE})
