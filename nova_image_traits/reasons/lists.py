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
"""The reasons that list names: traits, requirements, resources, properties.

Each is a sentence of :mod:`nova_image_traits.reasons`, built around a
list that :mod:`nova_image_traits.listing` fits to nova's column.
"""

from nova_image_traits.i18n import _
from nova_image_traits import listing
from nova_image_traits import traits as nit_traits

_FIX = _('Fix or remove the image property, then rebuild again.')
_FIX_MANY = _('Fix or remove the image property, or properties, then '
              'rebuild again.')


def trait_reason(traits, what, advice=None):
    """Return a user reason naming ``traits`` first, that fits.

    Nova keeps only 255 characters of a refusal, so the traits come first,
    then ``what`` is wrong with them, then the advice. When everything does
    not fit, the advice is dropped first, then the traits that do not fit
    are counted ("and 3 more"); the decision's log line names them all.

    :param traits: the trait names
    :param what: what is wrong with them, e.g. "missing on this server's
        compute node"
    :param advice: what the user can do; the default says to use another
        image or create a new server
    """
    return listing.fitted(sorted(traits), ', ', what, _advice(advice))


def _advice(advice):
    if advice is None:
        return _('Rebuild with another image, or create a new server with '
                 'this one.')
    return advice


def _clause(requirement):
    """"hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0", for users."""
    values = {'cause': requirement.cause(), 'trait': requirement.trait}
    if not requirement.derived:
        return _('the new image requires %(trait)s') % values
    if requirement.forbidden:
        return _('%(cause)s forbids %(trait)s') % values
    return _('%(cause)s needs %(trait)s') % values


def requirement_reason(unmet, what, advice=None):
    """A user reason naming each unmet requirement by what caused it.

    "hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0: missing on this
    server's compute node." It fits, as :func:`trait_reason`.

    :param unmet: :class:`~nova_image_traits.requirements.Requirement`
        objects
    :param what: what the strategy found of them
    """
    return listing.fitted([_clause(r) for r in sorted(unmet)], '; ', what,
                          _advice(advice))


def resource_reason(needs, what=None):
    """The refusal of an image that needs resources the server lacks.

    :param needs: :class:`~nova_image_traits.requirements.ResourceNeed`
        objects
    :param what: what is wrong; by default that the server does not hold
        them
    """
    return listing.fitted(
        [_('%(cause)s needs %(rc)s') % {'cause': n.cause(),
                                        'rc': n.resource_class}
         for n in needs], '; ',
        what or _('this server does not hold it, and a rebuild keeps the '
                  'resources it holds'),
        _('Create a new server with this image instead.'))


def missing_message(missing, lacks):
    """User-facing text for traits the strategy found missing.

    :param missing: the trait names
    :param lacks: what the strategy judged, as the strategy's ``lacks``
        phrase ("missing on the resources this server uses")
    """
    return trait_reason(missing, _('required by the new image, %s') % lacks)


def invalid_reason(invalid):
    """The refusal naming the invalid properties, fit for nova's column.

    :param invalid: ``(property, why)`` pairs
    """
    names = [nit_traits.quote(prop) for prop, _why in invalid]
    if len(names) == 1:
        message = _('Image property %(property)s does not name a valid '
                    'trait: %(why)s. %(fix)s') % {
                        'property': names[0], 'why': invalid[0][1],
                        'fix': _FIX}
        if listing.fits(message):
            return message
        return _('Image property %(property)s does not name a valid '
                 'trait. %(fix)s') % {'property': names[0], 'fix': _FIX}
    template = _('Image properties %(listed)s do not name valid traits. '
                 '%(fix)s')
    more = _('%(shown)s and %(count)d more')
    fixed = len((template % {'listed': more % {'shown': '', 'count': 999},
                             'fix': _FIX_MANY}).encode('utf-8'))
    shown = [names[0]]
    for name in names[1:]:
        if fixed + len(', '.join(shown + [name]).encode('utf-8')) > (
                listing.MAX_REASON):
            break
        shown.append(name)
    if len(shown) < len(names):
        listed = more % {'shown': ', '.join(shown),
                         'count': len(names) - len(shown)}
    else:
        listed = _('%(names)s and %(last)s') % {
            'names': ', '.join(shown[:-1]), 'last': shown[-1]}
    return template % {'listed': listed, 'fix': _FIX_MANY}
