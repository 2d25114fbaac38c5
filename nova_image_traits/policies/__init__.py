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
"""The policy rules of nova-image-traits, for nova's own enforcer.

As placement's and nova's ``policies`` packages: :func:`list_rules` is
the ``oslo.policy.policies`` entry point (namespace
``nova_image_traits``), so that ``oslopolicy-sample-generator
--namespace nova_image_traits`` prints the rules and nova's
``policy.yaml`` can override them. Only oslo.policy here: the rules are
registered with nova's enforcer by :mod:`nova_image_traits.api.policy`.
"""

import itertools

from nova_image_traits.policies import refusal


def list_rules():
    """Every rule, as ``oslo_policy.policy.DocumentedRuleDefault``."""
    return list(itertools.chain(refusal.list_rules()))
