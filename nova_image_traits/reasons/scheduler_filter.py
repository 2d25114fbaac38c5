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
"""The reason of a refusal by one of nova's rebuild scheduler filters.

The nova-api pre-check runs them for the server's own host when
``[image_traits] precheck_scheduler_filters`` is on.
"""

from nova_image_traits.i18n import _
from nova_image_traits import listing
from nova_image_traits.reasons import wording

#: The log line's cause of such a refusal.
CAUSE = 'refused-by-scheduler-filter'


def refused(name, host, node):
    """The reason of a rebuild a scheduler filter refuses for its host.

    The filter's name tells of the host: ``AggregateImagePropertiesIsolation``
    says the host is in an aggregate whose metadata the image does not
    match, ``IsolatedHostsFilter`` that the host is isolated. It is
    therefore host detail (``names_host``): a caller the policy does not
    allow reads the same reason as for a missing trait, and only the
    operator's log line names the host.

    :param name: the class name of the refusing filter
    :param host: the server's host
    :param node: the server's node
    """
    return wording.Reason(CAUSE, listing.cut(_(
        "The scheduler filter %s would not place a boot of the new image "
        "on this server's host. Rebuild with another image, or ask your "
        'cloud operator.') % name),
        '%s refused host %s (node %s) for the new image' % (
            name, host, node), names_host=True)
