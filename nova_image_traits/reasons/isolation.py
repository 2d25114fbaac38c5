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
"""The reason of a refusal for an aggregate isolated for a trait."""

from nova_image_traits.i18n import _
from nova_image_traits import listing
from nova_image_traits.reasons import wording

#: The log line's cause of such a refusal.
CAUSE = 'isolated-aggregate'
#: The detail of an image that asks nothing, outside those aggregates.
OUTSIDE = ('the new image requires no traits, and the server is outside '
           'the aggregates isolation forbids it')


def isolated(breach):
    """The reason of a rebuild that would break aggregate isolation.

    The message names no aggregate, trait or provider, but it still tells
    of the host: that it is isolated for something the new image does not
    require. Refusals are free, so a tenant who could read it would learn
    the isolating trait by trying images that require ever fewer traits.
    It is therefore host detail (``names_host``): a caller the policy does
    not allow reads the same reason as for a missing trait. The detail,
    for the operator's log line, names the providers and the forbidden
    aggregates they are in.

    :param breach: a :class:`~nova_image_traits.isolation.Breach`
    """
    return wording.Reason(CAUSE, listing.cut(_(
        "This server's host is reserved for images that require what the "
        'new image does not, so a boot of the new image would not be '
        'placed there. Rebuild with another image, or ask your cloud '
        'operator.')), 'a boot of the new image may not use %s: %s' % (
            'aggregates ' + ','.join(breach.aggregates),
            '; '.join('%s in %s' % (rp, ','.join(aggs))
                      for rp, aggs in sorted(breach.providers.items()))),
        names_host=True)
