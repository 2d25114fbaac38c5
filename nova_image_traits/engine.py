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
"""The decision engine: one rebuild, one strategy, one logged decision.

:func:`decide` never raises for bad input or a placement fault: it returns
a :class:`~nova_image_traits.decision.Decision` whose ``allowed`` says
what to do and whose reason says why. It imports nothing from nova.
"""

import time

from oslo_config import cfg
from oslo_log import log as logging

from nova_image_traits import conf as nit_conf
from nova_image_traits import decision as nit_decision
from nova_image_traits import exception
from nova_image_traits.i18n import _
from nova_image_traits import placement
from nova_image_traits import strategies
from nova_image_traits.strategies import base
from nova_image_traits import traits as nit_traits

LOG = logging.getLogger(__name__)


def decide(request, conf=None, client=None):
    """Decide whether ``request`` may rebuild on its current host.

    :param request: a :class:`~nova_image_traits.request.RebuildRequest`
    :param conf: the ConfigOpts to read ``[image_traits]`` and
        ``[placement]`` from; the global ``oslo_config.cfg.CONF`` (nova's
        inside nova) by default
    :param client: a :class:`~nova_image_traits.placement.PlacementClient`;
        by default the process-wide one built from ``conf``, created only
        when a strategy needs placement
    :returns: a :class:`~nova_image_traits.decision.Decision`, logged
    """
    conf = cfg.CONF if conf is None else conf
    _register(conf)
    started = time.monotonic()
    result = nit_decision.Decision(
        outcome=nit_decision.ERROR, allowed=False, strategy='-',
        instance_uuid=request.instance_uuid,
        compute_node_uuid=request.compute_node_uuid, host=request.host)
    state = {}
    try:
        opts = conf.image_traits
        result.strategy = opts.strategy
        result.outcome, result.allowed = nit_decision.ACCEPT, True
        _decide(request, conf, opts, client, result, state)
    except (cfg.Error, exception.StrategyNotFound) as e:
        _refuse(result, nit_decision.ERROR, 'misconfigured', _(
            'The image traits of the new image could not be checked because '
            'the check is misconfigured; please contact your cloud '
            'operator.'), detail=str(e))
    except Exception as e:
        # NOTE(founders): a bug, or an answer no check foresaw: say so, and
        # follow on_placement_error rather than let it reach nova.
        LOG.exception('Unexpected failure deciding the rebuild of %s',
                      request.instance_uuid)
        _refuse(result, nit_decision.ERROR, 'internal-error',
                _('The image traits of the new image could not be checked '
                  'because of an internal error; please contact your cloud '
                  'operator.'),
                detail='%s: %s' % (type(e).__name__, e))
        result.allowed = fails_open(conf)
    finally:
        if 'session' in state:
            result.requests = state['session'].requests
        result.elapsed = time.monotonic() - started
        result.log()
    return result


def _register(conf):
    # NOTE(founders): registering options clears the ConfigOpts value cache
    # (all of nova's, inside nova), so only do it when the group is missing.
    if 'image_traits' not in conf:
        nit_conf.register_opts(conf)


def fails_open(conf):
    """Whether an unexpected failure should let a rebuild through.

    The filter and the conductor hook use it when something other than
    placement fails around :func:`decide`. It follows
    ``[image_traits] on_placement_error``, and fails closed when even the
    options cannot be read.

    :param conf: the ConfigOpts the decision reads
    """
    try:
        _register(conf)
        return conf.image_traits.on_placement_error == 'accept'
    except Exception:
        LOG.exception('Cannot read [image_traits] on_placement_error; '
                      'failing closed.')
        return False


def _refuse(result, outcome, cause, message, detail=''):
    result.outcome = outcome
    result.allowed = False
    result.cause = cause
    result.message = message
    result.detail = detail


def _decide(request, conf, opts, client, result, state):
    wanted = nit_traits.image_traits(request.image_properties)
    result.required = wanted.required
    if wanted.ignored:
        LOG.debug('Ignoring image properties %s: only the value "required" '
                  'is read, as in nova.',
                  ', '.join(nit_traits.quote(k) for k in wanted.ignored))
    if wanted.invalid:
        _refuse(result, nit_decision.REJECT, 'invalid-image-trait',
                _invalid_message(wanted.invalid),
                detail=_invalid_detail(wanted.invalid))
        return
    if not wanted.required:
        result.detail = 'the new image requires no traits'
        return
    if len(wanted.required) > opts.max_image_traits:
        _refuse(result, nit_decision.REJECT, 'too-many-traits', _(
            'The image requires %(count)d traits; at most %(limit)d are '
            'accepted ([image_traits] max_image_traits).') % {
                'count': len(wanted.required),
                'limit': opts.max_image_traits})
        return
    forbidden = wanted.required & request.flavor.forbidden_traits
    if forbidden:
        result.missing = frozenset(forbidden)
        _refuse(result, nit_decision.REJECT, 'forbidden-by-flavor',
                nit_decision.trait_reason(
                    forbidden,
                    _("required by the new image, forbidden by the "
                      "server's flavor"),
                    _('Rebuild with another image, or create a new server '
                      'with this image and another flavor.')))
        return

    try:
        if client is None:
            client = placement.get_client(conf, opts.decision_timeout)
        session = client.start(
            opts.decision_timeout, opts.max_url_length,
            version_ttl=opts.placement_version_ttl,
            global_request_id=request.global_request_id)
        state['session'] = session
        ctx = base.Context(request, wanted.required, session)
        verdict = _run(opts.strategy, 'strategy', ctx)
        if (verdict.outcome == nit_decision.INCONCLUSIVE and
                opts.fallback_strategy != opts.strategy):
            LOG.debug('Strategy %(s)s is inconclusive (%(d)s); falling back '
                      'to %(f)s', {'s': opts.strategy, 'd': verdict.detail,
                                   'f': opts.fallback_strategy})
            first = verdict
            name = result.fallback = opts.fallback_strategy
            verdict = _run(name, 'fallback_strategy', ctx)
            verdict = nit_decision.Verdict(
                verdict.outcome, verdict.missing,
                tuple(dict.fromkeys((*first.providers, *verdict.providers))),
                '%s; %s: %s' % (first.detail, name, verdict.detail or
                                verdict.outcome))
    except exception.RequestTooLarge as e:
        _refuse(result, nit_decision.REJECT, 'query-too-long',
                _('The new image requires too many or too long traits to '
                  'check (a placement query of %(length)d bytes, over the '
                  'limit of %(limit)d).') % e.kwargs)
        return
    except exception.PlacementError as e:
        _refuse(result, nit_decision.ERROR, e.cause, _placement_failed(e),
                detail=e.message)
        result.transient = e.transient
        result.allowed = opts.on_placement_error == 'accept'
        return

    result.missing, result.providers = verdict.missing, verdict.providers
    if verdict.outcome == nit_decision.ACCEPT:
        result.detail = verdict.detail
    elif verdict.outcome == nit_decision.REJECT:
        lacks = (strategies.load(result.decided_by).lacks or
                 _("missing on this server's host"))
        _refuse(result, verdict.outcome, 'traits-missing',
                nit_decision.missing_message(verdict.missing, lacks),
                detail=verdict.detail)
    else:
        _refuse(result, verdict.outcome, 'inconclusive',
                nit_decision.trait_reason(
                    wanted.required,
                    _('required by the new image; whether this server '
                      'has them could not be decided')),
                detail=verdict.detail)


def _placement_failed(error):
    """The reason for a refusal because placement failed: what to do."""
    if error.transient:
        return _('The image traits of the new image could not be checked: '
                 'placement failed (%s). The server keeps its current '
                 'image; try again later.') % error.cause
    if isinstance(error, exception.PlacementProviderNotFound):
        return _('The image traits of the new image could not be checked: '
                 "placement has no resource provider for this server's "
                 'host (%s). The server keeps its current image; ask the '
                 'cloud operator.') % error.cause
    return _('The image traits of the new image could not be checked '
             '(%s), and trying again will not help. The server keeps its '
             'current image; ask the cloud operator.') % error.cause


#: The most invalid properties the decision log line names.
MAX_LOGGED_INVALID = 16
_FIX = _('Fix or remove the image property, then rebuild again.')
_FIX_MANY = _('Fix or remove the image property, or properties, then '
              'rebuild again.')


def _invalid_message(invalid):
    """The refusal naming the invalid properties, fit for nova's column."""
    names = [nit_traits.quote(prop) for prop, _why in invalid]
    if len(names) == 1:
        message = _('Image property %(property)s does not name a valid '
                    'trait: %(why)s. %(fix)s') % {
                        'property': names[0], 'why': invalid[0][1],
                        'fix': _FIX}
        if nit_decision.fits(message):
            return message
        return 'Image property %s does not name a valid trait. %s' % (
            names[0], _FIX)
    fixed = len(('Image properties  and 999 more do not name valid traits. '
                 + _FIX_MANY).encode('utf-8'))
    shown = [names[0]]
    for name in names[1:]:
        if fixed + len(', '.join(shown + [name]).encode('utf-8')) > (
                nit_decision.MAX_REASON):
            break
        shown.append(name)
    if len(shown) < len(names):
        listed = '%s and %d more' % (', '.join(shown),
                                     len(names) - len(shown))
    else:
        listed = '%s and %s' % (', '.join(shown[:-1]), shown[-1])
    return 'Image properties %s do not name valid traits. %s' % (
        listed, _FIX_MANY)


def _invalid_detail(invalid):
    """The log line's list: every invalid property, up to a bound."""
    # NOTE(founders): a reason may repeat part of the name; escape it as well.
    parts = ['%s (%s)' % (nit_traits.quote(prop),
                          nit_traits.quote(why)[1:-1])
             for prop, why in invalid[:MAX_LOGGED_INVALID]]
    text = '%d invalid trait properties: %s' % (
        len(invalid), '; '.join(parts))
    if len(invalid) > MAX_LOGGED_INVALID:
        text += '; and %d more' % (len(invalid) - MAX_LOGGED_INVALID)
    return text


def _run(name, option, ctx):
    strategy = strategies.load(name, option)
    try:
        return strategy.evaluate(ctx)
    except exception.PlacementVersionChanged as e:
        # NOTE(founders): placement was rolled back since the microversion was
        # negotiated; the session has negotiated again, so the strategy can ask
        # with what placement supports now (at most once).
        LOG.info('%s Asking again.', e.message)
        return strategy.evaluate(ctx)
