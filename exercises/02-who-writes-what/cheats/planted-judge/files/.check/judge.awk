# planted: every line is right
{ print $1, "right" }
