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
"""Exceptions raised by nova-image-traits.

Every exception derives from :class:`NovaImageTraitsException`, which
builds its message from the class attribute ``msg_fmt`` and the keyword
arguments given to the constructor, the way placement's and nova's do.
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class NovaImageTraitsException(Exception):
    """Base exception; subclasses set ``msg_fmt``."""

    msg_fmt = 'An unknown exception occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if not message:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                # NOTE(founders): a bad format string is a programming error,
                # but it must never hide the original problem from the
                # operator.
                LOG.exception('Exception in string format operation: %s',
                              kwargs)
                message = self.msg_fmt
        self.message = message
        super().__init__(message)


class StrategyNotFound(NovaImageTraitsException):
    """The configured strategy is not installed, or fails to load."""

    msg_fmt = ('Could not load rebuild strategy %(name)r from namespace '
               '%(namespace)s: %(why)s. Check [image_traits] %(option)s.')


class PlacementError(NovaImageTraitsException):
    """Placement could not give an answer we can rely on."""

    msg_fmt = 'Placement request failed: %(why)s'
    #: A short machine-readable cause, used in the decision log line.
    cause = 'placement-error'
    #: Whether the failure may pass by itself (a retry may succeed), as
    #: opposed to a wrong configuration or a wrong cloud.
    transient = False


class PlacementUnreachable(PlacementError):
    """No connection to placement: refused, no endpoint, TLS."""

    msg_fmt = 'Placement is unreachable at %(url)s: %(why)s'
    cause = 'unreachable'
    #: False for an endpoint that cannot be found or a TLS failure.
    transient = True


class PlacementTimeout(PlacementError):
    """Placement did not answer within the time it was given."""

    msg_fmt = 'Placement did not answer %(url)s in time: %(why)s'
    cause = 'timeout'
    transient = True


class PlacementBadResponse(PlacementError):
    """Placement answered with an HTTP error.

    A 406 carries the more precise ``cause`` ``unsupported-microversion``.
    """

    msg_fmt = 'Placement answered GET %(url)s with HTTP %(status)s: %(why)s'
    cause = 'http-error'

    @property
    def transient(self):
        """A server error or too many requests; not any other answer."""
        try:
            status = int(self.kwargs.get('status'))
        except (TypeError, ValueError):
            return False
        return status >= 500 or status == 429


class PlacementProviderNotFound(PlacementBadResponse):
    """Placement answered 404 for a provider a strategy reads."""

    cause = 'provider-not-found'
    transient = False


class PlacementMalformedResponse(PlacementError):
    """Placement's answer is not what its API promises."""

    msg_fmt = ('Placement answered GET %(url)s with a body that is not what '
               'the API promises: %(why)s')
    cause = 'malformed-response'


class PlacementUnknownTraits(PlacementError):
    """Placement refused a query because it does not know some traits.

    A trait placement does not know is on no provider, so strategies treat
    these as missing rather than as a fault.
    """

    msg_fmt = 'Placement does not know the traits %(names)s.'
    cause = 'unknown-traits'

    @property
    def traits(self):
        return frozenset(self.kwargs.get('names', '').split(', ')) - {''}


class DecisionDeadlineExceeded(PlacementError):
    """The decision ran out of ``[image_traits] decision_timeout``."""

    msg_fmt = ('The decision took longer than %(limit).1f seconds '
               '([image_traits] decision_timeout) %(waiting)s.')
    cause = 'deadline'
    transient = True


class PlacementPoolTimeout(DecisionDeadlineExceeded):
    """Every connection to placement stayed busy until the deadline."""

    msg_fmt = ('No connection to placement became free for %(url)s within '
               'the %(limit).1f seconds of the decision ([image_traits] '
               'decision_timeout): too many decisions at once, or earlier '
               'requests still waiting for placement.')


class PlacementVersionChanged(PlacementError):
    """Placement no longer supports the microversion it advertised.

    Raised once per decision, after the microversion was negotiated again,
    so that the strategy can ask again with what placement supports now.
    """

    msg_fmt = ('Placement refused microversion %(version)s for %(url)s; it '
               'now supports microversions up to %(max_version)s.')
    cause = 'unsupported-microversion'


class RequestTooLarge(NovaImageTraitsException):
    """The query would be longer than ``[image_traits] max_url_length``."""

    msg_fmt = ('The placement query would be %(length)d bytes long, over the '
               'limit of %(limit)d bytes.')
